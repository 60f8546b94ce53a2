"""The step loops of :mod:`attentive_reader.cpu_speedups.gru`, each direction on its own core.

The two directions of a bidirectional GRU are independent recurrences. Their steps are small
(a (32, h) x (h, 3h) product and five element-wise operations on a few thousand numbers), so
a step costs about as much in dispatch as in arithmetic, and one step of both directions
together (a batched product, then the element-wise operations over both) keeps only one core
busy between products. Here each direction's loop is a TorchScript function, which runs
without Python's GIL, so the directions run at once: the first on the calling thread, each
other one on a helper thread kept for it (Python threads running the Python loop would take
the GIL by turns, slower than one thread). A direction's thread first flushes subnormal
floats if the calling thread does (``cpu_speedups.denormals``; the flags are each thread's).
Intra-op threads are set to 1 during the loops, so that the two loops do not both spread
their products over every core; they are restored after. The directions go in parallel only
where torch may use at least 2 threads (``torch.get_num_threads()``): a process told to use
one thread (as two training runs side by side on 2 cores are) keeps one.

The loops compute exactly what the loops of :mod:`attentive_reader.cpu_speedups.gru` compute
(tests compare both with ``nn.GRU``, values and gradients). ``CpuSpeedups(gru_directions=
"serial")`` keeps the directions together, as does any failure to compile TorchScript (a
Python without the package's source files, a torch without ``torch.jit``): then
:func:`loops` is ``None`` and the callers run their own loops.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor

from attentive_reader.cpu_speedups.denormals import flushed


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


class Loops:
    """The compiled loops, every direction at once, with one intra-op thread."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.jit.script's deprecation notice
            self._forward = torch.jit.script(_forward_direction)
            self._backward = torch.jit.script(_backward_direction)

    def forward(
        self, states: Tensor, gates: Tensor, candidates: Tensor, hidden: Tensor,
        input_rz: Tensor, input_n: Tensor, bias_n: Tensor, w_hh_t: Tensor, scratch: Tensor,
        sizes: list[int], offsets: list[int], first: int,
    ) -> None:  # fmt: skip
        """``gru._run_steps``'s loop: the (K, ...) tensors there, ``bias_n`` (K, h) and
        ``scratch`` (K, at least k(0) 3h); direction ``j`` reads and writes index ``j``."""
        per_direction = zip(
            states, gates, candidates, hidden, input_rz, input_n, bias_n, w_hh_t, scratch,
            strict=True,
        )  # fmt: skip
        _at_once(self._forward, [(*tensors, sizes, offsets, first) for tensors in per_direction])

    def backward(
        self, grad_h: Tensor, coefficients: Tensor, z: Tensor, w_hh: Tensor,
        sizes: list[int], offsets: list[int],
    ) -> Tensor:  # fmt: skip
        """``gru._carry_back``'s loop, ``coefficients`` turned into the gradients in place."""
        per_direction = zip(grad_h, coefficients, z, w_hh, strict=True)
        _at_once(self._backward, [(*tensors, sizes, offsets) for tensors in per_direction])
        return coefficients


def _at_once(function: Callable[..., Any], calls: list[tuple[Any, ...]]) -> None:
    """``function(*args)`` for every ``args`` of ``calls`` at once, the first on this thread
    and the others on helper threads; without autograd (the loops fill the buffers of an
    autograd function), which, like the flags for subnormal floats, is each thread's own
    setting."""
    flush = flushed()
    with _one_intra_op_thread():
        tasks = [_Task(function, args, flush) for args in calls[1:]]
        for helper, task in zip(_helpers(len(tasks)), tasks, strict=True):
            helper.put(task)
        try:
            with torch.no_grad():
                function(*calls[0])
        finally:
            for task in tasks:
                task.done.wait()
    for task in tasks:
        if task.error is not None:
            raise task.error


class _Task:
    """One call for a helper thread, and how it ended."""

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...], flush: bool) -> None:
        self.function, self.args, self.flush = function, args, flush
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            torch.set_flush_denormal(self.flush)  # as the calling thread
            with torch.no_grad():
                self.function(*self.args)
        except BaseException as error:  # handed to the calling thread
            self.error = error
        finally:
            self.done.set()


class _Helper:
    """A thread kept for the loops' other directions: a new thread for every call would set
    up its per-thread state (MKL's buffers among them) every time, about 10% of a step."""

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[_Task] = queue.SimpleQueue()
        thread = threading.Thread(target=self._serve, name="gru-direction", daemon=True)
        thread.start()

    def put(self, task: _Task) -> None:
        self._tasks.put(task)

    def _serve(self) -> None:
        # One intra-op thread for this thread's own work, before its first task (created
        # under ``_one_intra_op_thread``, so the process's count is 1 now, and the calling
        # thread restores its own after the task). Without it, MKL's products here ran a
        # team of as many threads as cores of this thread's own, which stays in the process:
        # libgomp then counts more threads than cores and has every team's threads sleep
        # instead of spin between parallel sections, and every later step of the process
        # waited for sleeping threads (docs/performance.md has the measurements).
        torch.set_num_threads(1)
        while True:
            self._tasks.get().run()


_HELPERS: list[_Helper] = []
_HELPERS_PID = os.getpid()


def _helpers(count: int) -> list[_Helper]:
    """``count`` helper threads of this process (a forked child starts its own)."""
    global _HELPERS_PID
    if _HELPERS_PID != os.getpid():
        _HELPERS.clear()
        _HELPERS_PID = os.getpid()
    while len(_HELPERS) < count:
        _HELPERS.append(_Helper())
    return _HELPERS[:count]


@functools.cache
def _compiled() -> Loops | None:
    try:
        return Loops()
    except Exception:  # no source files, no TorchScript: the callers' own loops serve
        return None


# Below this many (steps x hidden units) a direction's loop is too short to pay for handing
# it to another thread: tiny readers (the tests' hidden 8, ~30 steps) trained slower in
# parallel. Real documents (hundreds of steps, hidden 128) are far above it.
MIN_WORK = 16_384


def loops(directions: int, steps: int = MIN_WORK, hidden: int = 1) -> Loops | None:
    """The parallel loops for ``directions`` GRUs read together over ``steps`` steps of
    ``hidden`` units, or ``None`` where the callers' loops serve: one direction, one torch
    thread, a short or narrow loop (``MIN_WORK``), or no TorchScript."""
    if directions < 2 or torch.get_num_threads() < 2 or steps * hidden < MIN_WORK:
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
