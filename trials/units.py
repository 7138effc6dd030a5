"""The trainable units of a network: their container, their draw, and the memory they live in.

- ``Units``: the unit parameters u, v stacked as (L, R, D, M) (layer, repetition, coordinate, unit).
- ``init_units`` / ``draw_units``: the numbers, one random stream per (seed, tensor, block of
  layers), the same on every device, dtype, host and number of threads; a pack's points at one
  seed index share the streams (``draw_units``).
- ``Allocator``, ``fresh``, ``Scratch``: where a trial's tensors come from (a worker's spares).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .config import UNIT_BLOCK, TrialConfig, stream_seed


@dataclass
class Units:
    """The trainable unit parameters, stacked as (L, R, D, M): layer, repetition, coordinate, unit."""

    u: torch.Tensor
    v: torch.Tensor

    def clone(self) -> "Units":
        return Units(self.u.clone(), self.v.clone())


Allocator = Callable[[tuple[int, ...], torch.dtype, torch.device], torch.Tensor]


def fresh(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The default ``Allocator``: a new uninitialized tensor."""
    return torch.empty(shape, dtype=dtype, device=device)


class Scratch:
    """An ``Allocator`` for one trial that hands out spare tensors of an earlier one.

    A worker trains many points of one shape in a row; every tensor of a trial is fresh memory
    whose first touch (page faults, zeroing by the kernel) cost about two bare steps per trial
    at (256, 256, 32). ``take`` hands out a spare of the same shape, dtype and device when there
    is one, else a new tensor, and remembers what it lent; after the trial ``lent`` are the
    spares of the next. Every tensor taken is uninitialized as far as the caller knows (like
    ``torch.empty``), so reuse changes no number. The first miss drops the remaining spares:
    a trial of another shape then holds no more memory than it would alone."""

    def __init__(self, spares: dict | None = None):
        self.spares: dict[tuple, list[torch.Tensor]] = spares or {}
        self.lent: list[torch.Tensor] = []

    def __call__(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        key = (tuple(shape), dtype, torch.device(device))
        stack = self.spares.get(key)
        if stack:
            tensor = stack.pop()
        else:
            self.spares.clear()
            tensor = torch.empty(shape, dtype=dtype, device=device)
        self.lent.append(tensor)
        return tensor

    def returned(self) -> dict[tuple, list[torch.Tensor]]:
        """What this trial lent, as the spares of the next one."""
        spares: dict[tuple, list[torch.Tensor]] = {}
        for tensor in self.lent:
            spares.setdefault((tuple(tensor.shape), tensor.dtype, tensor.device), []).append(tensor)
        return spares


def unit_blocks(L: int, D: int, drawn: int) -> list[tuple[int, int]]:
    """The layer ranges [start, stop) that draw from one stream each (``UNIT_BLOCK``)."""
    per_block = max(1, UNIT_BLOCK // (D * drawn))
    return [(start, min(start + per_block, L)) for start in range(0, L, per_block)]


def init_units(config: TrialConfig, seeds: tuple[int, ...], device: torch.device, dtype: torch.dtype,
               alloc: Allocator = fresh) -> Units:
    """Draw unit parameters: entries N(0, sigma_u^2 D) for u and N(0, sigma_v^2 D) for v.

    The numbers: in float64 on the CPU, numpy's SFC64 bit generator and its ziggurat normal
    sampler (``Generator.standard_normal``), one stream per (seed, tensor, block of layers)
    seeded by ``SeedSequence([stream_seed("units", seed), tensor, block])`` (tensor 0 is u, 1 is
    v; blocks from ``unit_blocks``), times sigma sqrt(D), then converted to the working dtype on
    the device. So a seed gives the same network on every device, dtype and number of threads,
    and on every host: SFC64's stream is fixed by numpy on every platform, and the sampler takes
    all but ~0.03 % of its numbers from integer operations and one multiplication (the tail
    beyond 3.65 sigma uses log1p; a wedge rejection compares against exp). Streams per block
    let every core draw (~8 ns per number and core, twice as fast as torch's float64 randn).

    With ``antithetic`` the second half of each layer's units mirrors the first: (u, v) and
    (u, -v). Each unit still has the law mu_0, and the branch output is exactly zero at init.
    """
    draws = [UnitDraw(int(seed), config.sigma_u, config.sigma_v, config.antithetic) for seed in seeds]
    return draw_units(config.L, config.M, config.D, draws, device, dtype, alloc)


@dataclass(frozen=True)
class UnitDraw:
    """What one repetition's units are drawn from (``init_units``): its seed's streams, scaled."""

    seed: int
    sigma_u: float
    sigma_v: float
    antithetic: bool


def draw_units(L: int, M: int, D: int, draws: list[UnitDraw], device: torch.device, dtype: torch.dtype,
               alloc: Allocator = fresh, streams: dict | None = None) -> Units:
    """The units of every repetition of a batch, (L, len(draws), D, M), as ``init_units`` draws
    them. Repetitions that share a seed (and antithetic) share its streams: each stream is drawn
    once and copied, times each repetition's sigma sqrt(D), into every repetition that reads it
    (a pack's points at one seed index: ``ResNet.fused``), with the same numbers as its own draw.

    ``streams``: a cache of drawn streams (float64 standard normals by (seed, antithetic, tensor,
    block)) to read and fill, for batches drawn one after another from the same seeds (a pack
    trained point by point: trials.train)."""
    # (L, R, D, M): a layer's weights for all repetitions are one contiguous block
    u = alloc((L, len(draws), D, M), dtype, device)
    v = alloc((L, len(draws), D, M), dtype, device)
    readers: dict[tuple[int, bool], list[int]] = {}
    for r, d in enumerate(draws):
        readers.setdefault((d.seed, d.antithetic), []).append(r)
    tasks = [(key, tensor, b) for key in readers for tensor in range(2)
             for b in range(len(unit_blocks(L, D, M // 2 if key[1] else M)))]

    def draw(task: tuple[tuple[int, bool], int, int]) -> None:
        (seed, antithetic), tensor, b = task
        drawn = M // 2 if antithetic else M
        start, stop = unit_blocks(L, D, drawn)[b]
        out = (u, v)[tensor]
        normals = None if streams is None else streams.get((seed, antithetic, tensor, b))
        if normals is None:
            entropy = [stream_seed("units", seed), tensor, b]
            normals = np.random.Generator(np.random.SFC64(entropy)).standard_normal((stop - start, D, drawn))
            if streams is not None:
                streams[(seed, antithetic, tensor, b)] = normals
        by_scale: dict[float, list[int]] = {}
        for r in readers[(seed, antithetic)]:
            by_scale.setdefault((draws[r].sigma_u, draws[r].sigma_v)[tensor] * D**0.5, []).append(r)
        for i, (scale, rs) in enumerate(by_scale.items()):
            # in place for the last scale (one scale: the draw's own buffer, as a lone draw does),
            # never in a cached stream
            in_place = i == len(by_scale) - 1 and streams is None
            buf = np.multiply(normals, scale, out=normals if in_place else None)
            block = torch.from_numpy(buf)
            for r in rs:
                out[start:stop, r, :, :drawn].copy_(block)
            if antithetic:
                mirror = block if tensor == 0 else block.neg_()
                for r in rs:
                    out[start:stop, r, :, drawn:].copy_(mirror)

    # numpy's samplers and torch's copies release the GIL: the blocks draw in parallel threads
    workers = min(len(tasks), torch.get_num_threads())
    if workers > 1 and L * D * M >= 1 << 16:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(draw, tasks))
    else:
        for task in tasks:
            draw(task)
    return Units(u, v)
