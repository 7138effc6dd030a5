"""Every command of `explorer` (read from the click group, so a new command is covered without
editing this file) has help text, answers --help, and is documented in docs/cli.md, which is
exactly the generated reference."""
from __future__ import annotations


import pytest
from click.testing import CliRunner

from explorer.cli import cli_reference, main

from tests.paths import REPO_ROOT

CLI_DOC = REPO_ROOT / "docs" / "cli.md"
COMMANDS = sorted(main.commands)


def test_the_registry_is_not_empty():
    assert {"sweep", "status", "sql", "check", "compact"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_text(name):
    command = main.commands[name]
    assert command.help and command.help.strip(), f"explorer {name} has no help text"
    for param in command.params:
        if param.param_type_name == "option" and not getattr(param, "hidden", False):
            assert param.help, f"explorer {name} {param.opts[0]} has no help text"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_answers_help(name):
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: main {name}") or f" {name} " in result.output.splitlines()[0]
    if any("--store" in p.opts for p in main.commands[name].params):
        assert "--store URI" in result.output


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_a_section_in_the_reference(name):
    assert f"## explorer {name}\n" in CLI_DOC.read_text()


def test_the_reference_is_the_generated_one():
    assert CLI_DOC.read_text() == cli_reference(), (
        "docs/cli.md is out of date: python -m explorer.cli.reference > docs/cli.md")


def test_every_summary_in_the_command_list_is_a_whole_sentence_within_80_columns():
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    listing = result.output.split("Commands:\n", 1)[1].splitlines()
    shown = {line.split()[0]: line for line in listing if line.strip()}
    assert sorted(shown) == COMMANDS
    for name, line in shown.items():
        summary = line.split(None, 1)[1]
        assert len(line) <= 80 and not summary.endswith("..."), line
        assert summary.endswith(".") and summary == main.commands[name].get_short_help_str(limit=10**6), line


def test_fit_help_lists_every_registry_form_and_every_fit_metric():
    from explorer.analysis.laws import FORMS, METHODS
    from explorer.analysis.data import FIT_METRICS

    result = CliRunner().invoke(main, ["fit", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    form_help = text[text.index("--form F"):text.index("--where SQL")]
    metric_help = text[text.index("--metric NAME"):text.index("--step K")]
    assert all(f"{name} (" in form_help for name in FORMS), form_help
    method_metrics = tuple(name for method in METHODS.values() for name in method.metrics)
    assert all(name in metric_help for name in FIT_METRICS + method_metrics), metric_help


def registry_of_help() -> dict:
    """Each help text a CLI option reads from a registry -> the names it must list."""
    from explorer.cli import options as cli_options
    from explorer.analysis.compare import COMPARED_FORMS
    from explorer.analysis.data import ALL_METRICS, FIT_METRICS, GRID_COLUMNS
    from explorer.analysis.laws import FORMS
    from explorer.analysis.phase import AXES

    return {cli_options.metric_names: FIT_METRICS, cli_options.fit_metric_names: ALL_METRICS,
            cli_options.form_names: tuple(f"{name} (" for name in FORMS),
            cli_options.axis_names: AXES, cli_options.column_names: GRID_COLUMNS,
            cli_options.compared_forms: COMPARED_FORMS}


def registry_options():
    """(command, option) for every option whose help ends with a registry's names."""
    from explorer.cli.options import RegistryHelpOption

    return [(name, param) for name, command in sorted(main.commands.items()) for param in command.params
            if isinstance(param, RegistryHelpOption)]


def test_every_registry_name_appears_in_the_help_of_each_option_that_lists_it():
    found = registry_options()
    assert {"fit", "report", "compare", "phase"} <= {name for name, _ in found}
    table = registry_of_help()
    for name, param in found:
        assert param.registry_help in table, f"{name} {param.opts[0]}: a registry help this test does not know"
        shown = CliRunner().invoke(main, [name, "--help"], terminal_width=200)
        assert shown.exit_code == 0, shown.output
        text = " ".join(shown.output.split())
        with main.make_context("explorer", [name, "--help"], resilient_parsing=True) as ctx:
            record = " ".join(param.get_help_record(ctx)[1].split())
        assert record in text, (name, param.opts[0])
        missing = [n for n in table[param.registry_help] if n not in record]
        assert not missing, f"explorer {name} --help, {param.opts[0]}: {missing} not listed"
