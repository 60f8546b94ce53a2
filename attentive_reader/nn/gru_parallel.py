"""The step loops of :mod:`attentive_reader.nn.gru`, each direction on its own core.

The two directions of a bidirectional GRU are independent recurrences. Their steps are small
(a (32, h) x (h, 3h) product and five element-wise operations on a few thousand numbers), so
a step costs about as much in dispatch as in arithmetic and one step of both directions
together (a batched product, then the element-wise operations over both) keeps only one core
busy between products. Here each direction's loop is a TorchScript function, and
``torch.jit.fork`` runs the directions at once on torch's inter-op threads, which do not hold
Python's GIL (two Python threads did: their loop was 2.7x slower than one). Intra-op threads
are set to 1 during the loops, so that the two loops do not both spread their products over
every core; they are restored after. The directions go in parallel only where torch may use
at least 2 threads (``torch.get_num_threads()``): a process told to use one thread (as two
training runs side by side on 2 cores are) keeps one.

The loops compute exactly what the loops of :mod:`attentive_reader.nn.gru` compute (tests
compare both with ``nn.GRU``, values and gradients). ``ATTENTIVE_READER_GRU_DIRECTIONS=serial``
keeps the directions together, as does any failure to compile TorchScript (a Python without
the package's source files, a torch without ``torch.jit``): then :func:`loops` is ``None`` and
the callers run their own loops.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor

from attentive_reader.checks import environment_choice

ENVIRONMENT = "ATTENTIVE_READER_GRU_DIRECTIONS"


def _forward_direction(
    states: Tensor,
    gates: Tensor,
    candidates: Tensor,
    hidden: Tensor,
    input_rz: Tensor,
    input_n: Tensor,
    bias_n: Tensor,
    w_hh_t: Tensor,
    scratch: Tensor,
    sizes: list[int],
    offsets: list[int],
    first: int,
) -> Tensor:
    """One direction's forward loop (``gru._run_steps``, one of its ``K``): 2-D tensors,
    ``states`` (k(0) + N, h), ``gates`` (N, 2h), ``candidates`` and ``hidden`` (N, h),
    ``input_rz`` (N, 2h), ``input_n`` (N, h), ``bias_n`` (h,), ``w_hh_t`` (h, 3h), ``scratch``
    (at least k(0) 3h,)."""
    h = candidates.shape[1]
    previous = 0
    for i in range(len(sizes)):
        k = sizes[i]
        start = offsets[i]
        h_prev = states[previous : previous + k]  # (k, h)
        gh = torch.mm(h_prev, w_hh_t, out=scratch[: k * 3 * h].view(k, 3 * h))  # (k, 3h)
        rz = torch.add(input_rz[start : start + k], gh[:, : 2 * h], out=gates[start : start + k])
        rz.sigmoid_()  # (k, 2h)
        hn = torch.add(gh[:, 2 * h :], bias_n, out=hidden[start : start + k])  # (k, h)
        c = torch.addcmul(
            input_n[start : start + k], rz[:, :h], hn, out=candidates[start : start + k]
        )
        c.tanh_()  # (k, h)
        torch.lerp(c, h_prev, rz[:, h:], out=states[first + start : first + start + k])
        previous = first + start
    return states


def _forward(
    states: Tensor,
    gates: Tensor,
    candidates: Tensor,
    hidden: Tensor,
    input_rz: Tensor,
    input_n: Tensor,
    bias_n: Tensor,
    w_hh_t: Tensor,
    scratch: Tensor,
    sizes: list[int],
    offsets: list[int],
    first: int,
) -> Tensor:
    """Every direction's forward loop at once: the (K, ...) tensors of ``gru._run_steps``,
    ``bias_n`` (K, h), ``scratch`` (K, at least k(0) 3h)."""
    futures: list[torch.jit.Future[Tensor]] = []
    for j in range(1, states.shape[0]):
        futures.append(
            torch.jit.fork(
                _forward_direction,
                states[j],
                gates[j],
                candidates[j],
                hidden[j],
                input_rz[j],
                input_n[j],
                bias_n[j],
                w_hh_t[j],
                scratch[j],
                sizes,
                offsets,
                first,
            )  # fmt: skip
        )
    _forward_direction(
        states[0], gates[0], candidates[0], hidden[0], input_rz[0], input_n[0], bias_n[0],
        w_hh_t[0], scratch[0], sizes, offsets, first,
    )  # fmt: skip
    for future in futures:
        torch.jit.wait(future)
    return states


def _backward_direction(
    grad_h: Tensor,
    coefficients: Tensor,
    z: Tensor,
    w_hh: Tensor,
    sizes: list[int],
    offsets: list[int],
) -> Tensor:
    """One direction's backward loop (``gru._carry_back``, one of its ``K``): ``grad_h`` and
    ``z`` (N, h), ``coefficients`` (N, 3h), turned into the gradients in place, ``w_hh``
    (3h, h)."""
    h = grad_h.shape[1]
    carry = grad_h.new_empty([0, h])
    for i in range(len(sizes) - 1, -1, -1):
        k = sizes[i]
        start = offsets[i]
        g = grad_h[start : start + k]  # (k, h)
        if carry.shape[0] > 0:  # the next step continues the first rows of this one
            g[: carry.shape[0]].add_(carry)
        step = coefficients[start : start + k]  # (k, 3h)
        step.view(k, 3, h).mul_(g.unsqueeze(1))
        carry = torch.mm(step, w_hh).addcmul_(g, z[start : start + k])  # (k, h): dL/dh before
    return coefficients


def _backward(
    grad_h: Tensor,
    coefficients: Tensor,
    z: Tensor,
    w_hh: Tensor,
    sizes: list[int],
    offsets: list[int],
) -> Tensor:
    """Every direction's backward loop at once: the (K, ...) tensors of ``gru._carry_back``."""
    futures: list[torch.jit.Future[Tensor]] = []
    for j in range(1, grad_h.shape[0]):
        futures.append(
            torch.jit.fork(
                _backward_direction, grad_h[j], coefficients[j], z[j], w_hh[j], sizes, offsets
            )
        )
    _backward_direction(grad_h[0], coefficients[0], z[0], w_hh[0], sizes, offsets)
    for future in futures:
        torch.jit.wait(future)
    return coefficients


class Loops:
    """The compiled loops; each call runs with one intra-op thread."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.jit.script's deprecation notice
            self._forward = torch.jit.script(_forward)
            self._backward = torch.jit.script(_backward)

    def forward(self, *args: Any) -> Tensor:
        """:func:`_forward` (``gru._run_steps``'s arguments), directions in parallel."""
        with _one_intra_op_thread():
            return self._forward(*args)

    def backward(self, *args: Any) -> Tensor:
        """:func:`_backward` (``gru._carry_back``'s arguments), directions in parallel."""
        with _one_intra_op_thread():
            return self._backward(*args)


@functools.cache
def _compiled() -> Loops | None:
    try:
        return Loops()
    except Exception:  # no source files, no TorchScript: the callers' own loops serve
        return None


def loops(directions: int) -> Loops | None:
    """The parallel loops for ``directions`` GRUs read together, or ``None`` where the callers'
    loops serve: one direction, one torch thread, ``ATTENTIVE_READER_GRU_DIRECTIONS=serial``,
    or no TorchScript."""
    if directions < 2 or torch.get_num_threads() < 2:
        return None
    if environment_choice(os.environ, ENVIRONMENT, "parallel", "serial") == "serial":
        return None
    return _compiled()


_THREADS = threading.Lock()  # the thread count is the process's: one loop sets it at a time


@contextlib.contextmanager
def _one_intra_op_thread() -> Iterator[None]:
    with _THREADS:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)
