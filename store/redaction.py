"""Store URIs as people see them: without the credentials a URI can carry.

A store URI may hold secrets: the userinfo of ``s3://KEY:SECRET@bucket/prefix`` (pyarrow reads an
S3 access key and secret there) and query parameters such as ``secret_key=``, ``sas_token=`` or
``X-Amz-Signature=``. ``redact_uri`` replaces each with ``***`` wherever a URI appears in a text:
the store's display name (``Store.uri``) is made with it, and the CLI passes its error lines and
the command it prints for a resume through it too, since pyarrow's own messages quote the URI.
"""
from __future__ import annotations

import re

REDACTED = "***"

# scheme://, then the userinfo: everything up to the last "@" before the URI ends (a space or a
# quote). Wider than RFC 3986's userinfo on purpose: a raw secret with "/" or "?" in it (AWS
# secrets have "/") must not leak because the URI is malformed.
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s'\"]*@")
# a query parameter whose name says it is a secret, up to the next "&", "#", space or quote
_SECRET_PARAMETER = re.compile(
    r"([?&;][^=&\s'\"]*(?:secret|token|key|password|passwd|pwd|signature|sig|credential)[^=&\s'\"]*=)[^&#\s'\"]*",
    re.IGNORECASE)


def redact_uri(text: str) -> str:
    """``text`` with the userinfo and the secret query parameters of every URI in it replaced by
    ``***``: ``s3://KEY:SECRET@bucket/p?secret_key=S`` -> ``s3://***@bucket/p?secret_key=***``.
    A local path, or a URI without credentials, comes back unchanged."""
    if "://" not in text:
        return text
    text = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    return _SECRET_PARAMETER.sub(lambda m: m.group(1) + REDACTED, text)
