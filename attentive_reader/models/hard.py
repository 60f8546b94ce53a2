"""The hard-attention reader: picks k document tokens and reads only those (REINFORCE).

Soft attention reads every token a little; this reader samples positions from a policy over
the document, reads the chosen hidden states, and learns where to look from the reward of its
answer with the score-function estimator (``nn/reinforce.py``). A straight-through
Gumbel-softmax selection is available behind the same interface as a differentiable control.

Each choice is a part made once in ``__init__``: how positions are drawn in training
(``selection``) and in evaluation (``eval_mode``) is a ``Selector`` (``nn/selection.py``), the
reward and the baseline are a ``Reward`` and a ``Baseline`` (``nn/reinforce.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor

from attentive_reader.common.checks import check_positive
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models.base import Stage
from attentive_reader.models.output import HardExtras, ReaderOutput
from attentive_reader.models.parts import (
    PairReader,
    Readout,
    ReadoutName,
    check_choice,
)
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName, pointer_scores
from attentive_reader.nn.attention import Attention, ScorerName, build_scorer
from attentive_reader.nn.masking import mask_logits
from attentive_reader.nn.reinforce import (
    BASELINES,
    REWARDS,
    BaselineName,
    EntropySchedule,
    MovingAverageBaseline,
    RewardName,
    policy_entropy,
    reinforce_loss,
)
from attentive_reader.nn.selection import (
    GreedySelector,
    SampledSelector,
    Selection,
    SelectionStrategy,
    Selector,
    UniformSelector,
    build_selector,
)

EvalModeName = Literal["greedy", "sample", "expected", "uniform"]
EXPECTED_CHUNK = 64  # positions answered at once by eval_mode="expected" (bounds its memory)
SelectionName = Literal["reinforce", "gumbel"]
# How each selection draws its positions in training (nn/selection.py).
TRAINING_DRAWS: dict[str, SelectionStrategy] = {"reinforce": "sample", "gumbel": "gumbel"}


@dataclass(frozen=True)
class EvalMode:
    """How the reader reads in evaluation (``eval_mode``).

    Attributes:
        selector: how positions are chosen; a deterministic one once, any other
            ``eval_samples`` times.
        expected: answer with the average over every position under the policy
            (``k = 1``) instead of over the draws; the draw only says what was ``selected``.
    """

    selector: Selector
    expected: bool = False


EVAL_MODES: dict[str, EvalMode] = {
    "greedy": EvalMode(GreedySelector()),
    "sample": EvalMode(SampledSelector()),
    "expected": EvalMode(GreedySelector(), expected=True),  # selected: the top position
    "uniform": EvalMode(UniformSelector()),
}


class HardAttentionReader(PairReader):
    """Reads k selected document states instead of a soft average of all of them.

    With ``y_d(t)`` and ``u`` the Attentive Reader's document and query states::

        pi(t)  = masked softmax over real tokens of score(y_d(t), u)    (the policy)
        t_1..k ~ pi (sampled in training; in evaluation per eval_mode, e.g. the top k)
        r      = mean_j y_d(t_j),   g = readout(r, u)

    and ``g`` answers through the ``answer_layer`` (``tied`` or ``output``: ``pointer`` on
    the soft policy would make this a soft reader). Training minimises, over the
    ``num_samples`` selections per example (:meth:`step_loss`)::

        CE(p, answer) - (R - b) log pi(t_1..k)                  (R, b detached)
        + value_weight (V - R)^2                                (baseline="learned")
        + policy_supervision CE(attention sum of pi, answer)
        - entropy_bonus entropy_decay^step H(pi)

    ``R`` is ``log p(answer)`` or ``1[correct]`` (``reward``); ``selection="gumbel"``
    replaces the REINFORCE and value terms by the straight-through Gumbel-softmax gradient.
    ``forward`` returns ``attention=pi`` (b, n), ``selected`` (b, k) (the first sample's
    positions, ``-1`` in empty slots; the top position for ``eval_mode="expected"``, whose
    ``extras.sample_logits`` hold its one averaged answer) and ``extras`` (``HardExtras``).
    ``docs/hard-attention.md`` tells the design and its measurements.

    Args:
        scorer: the policy's scorer (``nn/attention.py``).
        attention_dim: hidden size of the additive scorer (default ``2h``).
        readout: ``paper`` or ``linear`` (``Readout``).
        answer_layer: ``tied`` (the default) or ``output``.
        k: positions read per selection.
        replacement: draw the k positions with replacement or without.
        num_samples: selections drawn per example in training (``s``; ``leave_one_out``
            needs 2).
        reward: ``log_likelihood`` or ``correct``.
        baseline: ``none``, ``ema`` (moving average of the reward), ``learned`` (a value head
            on the detached query and mean document state) or ``leave_one_out`` (the mean
            reward of the example's other samples).
        baseline_decay: the moving average's decay (``ema``).
        value_weight: weight of the value head's MSE (``learned``).
        entropy_bonus: initial weight of the entropy bonus (0: off).
        entropy_decay: its per-step multiplicative decay, in (0, 1].
        eval_mode: ``greedy`` (the top k), ``sample`` (the answer distribution averaged over
            ``eval_samples`` selections), ``expected`` (``k = 1``: the answer distribution
            averaged over every position, each weighted by its policy probability, which
            ``sample`` estimates) or ``uniform`` (positions drawn uniformly: the
            untrained-selection control).
        eval_samples: selections averaged by ``sample`` and ``uniform``.
        selection: ``reinforce`` or ``gumbel``.
        gumbel_temperature: the Gumbel-softmax temperature.
        policy_supervision: weight of ``-log`` of the policy's mass on the answer's mentions
            among the entity mentions (0: off); for ``k = 1`` the exact gradient of what
            REINFORCE estimates.
        **options: ``PairReader``'s and ``ClozeReader``'s.
    """

    answer_layers = ("output", "tied")
    eval_modes = get_args(EvalModeName)

    def __init__(
        self,
        *,
        scorer: ScorerName = "bilinear",
        attention_dim: int | None = None,
        readout: ReadoutName = "linear",
        answer_layer: AnswerLayerName = "tied",
        k: int = 1,
        replacement: bool = False,
        num_samples: int = 4,
        reward: RewardName = "log_likelihood",
        baseline: BaselineName = "leave_one_out",
        baseline_decay: float = 0.9,
        value_weight: float = 1.0,
        entropy_bonus: float = 0.01,
        entropy_decay: float = 0.999,
        eval_mode: EvalModeName = "greedy",
        eval_samples: int = 8,
        selection: SelectionName = "reinforce",
        gumbel_temperature: float = 1.0,
        policy_supervision: float = 0.0,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        _check_options(
            reward=reward,
            baseline=baseline,
            selection=selection,
            value_weight=value_weight,
            policy_supervision=policy_supervision,
            gumbel_temperature=gumbel_temperature,
        )
        check_positive(k=k, num_samples=num_samples, eval_samples=eval_samples)
        self.policy_supervision = policy_supervision
        self.k = k
        self.replacement = replacement
        self.num_samples = num_samples
        self.value_weight = value_weight
        self.eval_samples = eval_samples
        self.eval_mode = eval_mode  # checked, and its EvalMode chosen (the property)
        self.entropy_schedule = EntropySchedule(entropy_bonus, entropy_decay)
        # The moving average's state is saved whatever the baseline, so that checkpoints of
        # every baseline hold the same keys; only baseline="ema" reads it.
        self.moving_average = MovingAverageBaseline(baseline_decay)
        self.reward = REWARDS[reward]()
        self.baseline = BASELINES[baseline](self.moving_average, num_samples)
        self.train_selector = build_selector(TRAINING_DRAWS[selection], gumbel_temperature)

        states = self.encoders.output_dim  # 2h
        self.scorer = build_scorer(scorer, states, states, attention_dim)
        self.readout = Readout(readout, states)
        self.build_answer_layer(
            answer_layer,
            states,
            why=" (it reads k sampled positions; the soft policy would make it a soft reader)",
        )
        # V(u, mean y_d) for baseline="learned", on the detached query and mean document state.
        self.value_head = self.baseline.value_head(2 * states, states)

    @property
    def eval_mode(self) -> EvalModeName:
        """How the reader reads in evaluation; setting it chooses its ``EvalMode``."""
        return self._eval_mode

    @eval_mode.setter
    def eval_mode(self, name: EvalModeName) -> None:
        check_choice("eval_mode", name, get_args(EvalModeName))
        if name == "expected" and self.k != 1:
            raise ValueError(
                "eval_mode='expected' averages over single positions and needs k=1 (over k "
                f"positions there are too many selections to sum), got k={self.k}; use "
                "eval_mode='sample' for k > 1"
            )
        self._eval_mode = name
        self.evaluation = EVAL_MODES[name]

    # --- reading -------------------------------------------------------------------------

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch (letters as in ``ClozeBatch``; ``s`` samples, ``k`` positions).

        In training mode, ``num_samples`` selections are drawn per example (``selection``);
        in evaluation mode ``eval_mode`` decides. ``logits`` are the candidate-masked log of
        the answer distribution averaged over the samples (with one sample: that sample's
        logits).
        """
        mask = batch.context_mask  # (b, n)
        encoded = self.encode(batch)
        y_d, u = encoded.document, encoded.query_final  # (b, n, 2h), (b, 2h)
        # In float32 under any autocast: sampling and REINFORCE read its log-probabilities.
        policy = Attention.of(self.scorer.score(y_d, u).float(), mask)  # pi: (b, n)
        log_policy = policy.log_weights()  # (b, n)

        selector, samples = self._reading()
        chosen: Selection = selector.draw(
            log_policy.repeat_interleave(samples, dim=0),  # (b*s, n)
            mask.repeat_interleave(samples, dim=0),  # (b*s, n)
            self.k,
            replacement=self.replacement,
        )
        sample_logits = self._answer_samples(batch, chosen, y_d, u, samples)  # (b, s, e)
        if not self.training and self.evaluation.expected:
            logits = self._expected_logits(batch, y_d, u, log_policy)  # (b, e)
            sample_logits = logits.unsqueeze(1)  # (b, 1, e): the one "reading" reported
        else:
            logits = _mean_answer(sample_logits, batch.candidates)  # (b, e)

        b, n = mask.shape
        positions = chosen.positions.masked_fill(~chosen.valid, -1).view(b, samples, self.k)
        extras = HardExtras(
            policy_log_prob=chosen.log_prob.view(b, samples),  # (b, s)
            sample_logits=sample_logits,  # (b, s, e)
            samples_selected=positions,  # (b, s, k)
            entropy=policy_entropy(log_policy, mask),  # (b,)
            policy_scores=policy.scores,  # (b, n) the policy's unnormalised log-weights
            value=self._value(y_d, u, mask),  # (b,) | None
        )
        return ReaderOutput(
            logits=logits, attention=policy.weights, selected=positions[:, 0], extras=extras
        )

    def reading_mask(self, batch: ClozeBatch, output: ReaderOutput) -> Tensor:
        """The positions the answer read, (b, n) bool: those of every selection drawn (``k``
        for ``greedy``; the union of the ``eval_samples`` selections for ``sample`` and
        ``uniform``; in training, of the ``num_samples``), and every real token for
        ``eval_mode="expected"``, whose answer reads each position alone and averages them
        all under the policy."""
        if not self.training and self.evaluation.expected:
            return batch.context_mask
        extras = output.extras
        assert isinstance(extras, HardExtras)
        b, n = batch.context_mask.shape
        chosen = extras.samples_selected.flatten(1)  # (b, s*k), -1 in empty slots
        slots = torch.where(chosen >= 0, chosen, n)  # empty slots to a column past the end
        read = torch.zeros(b, n + 1, dtype=torch.bool, device=chosen.device)  # (b, n + 1)
        return read.scatter_(1, slots, True)[:, :n]  # (b, n)

    def _reading(self) -> tuple[Selector, int]:
        """How positions are drawn now, and how many selections per example."""
        if self.training:
            return self.train_selector, self.num_samples
        selector = self.evaluation.selector
        return selector, 1 if selector.deterministic else self.eval_samples

    def _answer_samples(
        self, batch: ClozeBatch, chosen: Selection, y_d: Tensor, u: Tensor, samples: int
    ) -> Tensor:
        """The candidate-masked answer logits (b, s, e) of each selection's reading
        ``r = mean_j y_d(t_j)``."""
        b, n, _ = y_d.shape
        weights = chosen.weights.to(y_d.dtype).view(b, samples, n)  # (b, s, n)
        r = torch.bmm(weights, y_d).flatten(0, 1)  # (b*s, 2h): the mean of the chosen states
        flat_u = u.repeat_interleave(samples, dim=0)  # (b*s, 2h)
        candidates = batch.candidates.repeat_interleave(samples, dim=0)  # (b*s, e)
        given = AnswerInput(vector=r, query=flat_u, weights=weights)
        return self.answer_scores(batch, given, candidates).view(b, samples, -1)  # (b, s, e)

    def _value(self, y_d: Tensor, u: Tensor, mask: Tensor) -> Tensor | None:
        """The value head's prediction of the reward (b,), or None without a value head."""
        if self.value_head is None:
            return None
        lengths = mask.sum(1, keepdim=True).clamp_min(1).to(y_d.dtype)  # (b, 1)
        mean_state = y_d.sum(1) / lengths  # (b, 2h); y_d is 0 on padding
        features = torch.cat([u, mean_state], dim=-1).detach()  # (b, 4h)
        return self.value_head(features).squeeze(-1).float()  # (b,)

    def _expected_logits(
        self, batch: ClozeBatch, y_d: Tensor, u: Tensor, log_policy: Tensor
    ) -> Tensor:
        """``log sum_t pi(t) p(a | t)``: the answer distribution of reading position ``t``
        alone, averaged over every real position under the policy (``eval_mode="expected"``,
        ``k = 1``), as candidate-masked log-probabilities (b, e).

        Each position is read as a selection of that one position (the same answer path as a
        sampled selection), ``EXPECTED_CHUNK`` positions at a time; padding has ``pi = 0``.
        """
        b, n, _ = y_d.shape
        mixed = []
        for start in range(0, n, EXPECTED_CHUNK):
            c = min(EXPECTED_CHUNK, n - start)
            positions = torch.arange(start, start + c, device=y_d.device)
            weights = F.one_hot(positions, n).to(y_d.dtype).expand(b, c, n)  # (b, c, n)
            given = AnswerInput(
                vector=y_d[:, start : start + c].reshape(b * c, -1),  # (b*c, 2h)
                query=u.repeat_interleave(c, dim=0),  # (b*c, 2h)
                weights=weights,
            )
            candidates = batch.candidates.repeat_interleave(c, dim=0)  # (b*c, e)
            answer = self.answer_scores(batch, given, candidates).view(b, c, -1)  # (b, c, e)
            joint = answer.float().log_softmax(-1) + log_policy[:, start : start + c, None]
            mixed.append(torch.logsumexp(joint, dim=1))  # (b, e)
        return mask_logits(torch.logsumexp(torch.stack(mixed, 1), dim=1), batch.candidates)

    # --- training ------------------------------------------------------------------------

    def step_loss(self, batch: ClozeBatch, output: ReaderOutput, stage: Stage) -> Tensor:
        """Training: the mean cross-entropy of the samples + REINFORCE (+ value MSE) - the
        entropy bonus (+ the policy supervision); validation and test: ``ClozeReader``'s.

        Logged per training step besides ``train_loss``: ``train_ce``, ``train_reward``
        (mean), ``train_baseline`` (mean), ``train_advantage_var``, ``train_entropy`` (mean
        policy entropy, nats), ``train_entropy_weight``, ``train_value_loss`` for the learned
        baseline and ``train_policy_supervision_loss`` with policy supervision.
        """
        if stage != "train":
            return super().step_loss(batch, output, stage)
        extras = output.extras
        assert isinstance(extras, HardExtras)
        reward, nll = self.rewards(extras.sample_logits, batch.answer)  # (b, s), (b, s)
        ce = nll.mean()
        loss = ce
        logged: dict[str, Tensor | float] = {"ce": ce.detach()}
        if self.policy_supervision > 0:
            # -log P(a selection lands on the answer's mention | it lands on an entity): the
            # attention-sum likelihood of the policy, the exact gradient for k = 1.
            entities = self.answer_context(batch).entities()  # (b, n)
            landing = mask_logits(
                pointer_scores(extras.policy_scores, entities, self.num_entities),
                batch.candidates,
            )  # (b, e)
            supervision = F.cross_entropy(landing, batch.answer)
            loss = loss + self.policy_supervision * supervision
            logged["policy_supervision_loss"] = supervision.detach()

        if not self.train_selector.differentiable:  # the policy learns by REINFORCE
            policy_loss, policy_logged = self._reinforce(reward, extras)
            loss = loss + policy_loss
            logged |= policy_logged

        entropy = extras.entropy.mean()
        weight = self.entropy_schedule(self.global_step)
        if weight > 0:
            loss = loss - weight * entropy
        logged |= {"entropy": entropy.detach(), "entropy_weight": weight}
        logged = {f"train_{name}": value for name, value in logged.items()}
        self.log_dict(logged, on_step=True, on_epoch=False, sync_dist=True, batch_size=len(batch))
        return loss

    def _reinforce(self, reward: Tensor, extras: HardExtras) -> tuple[Tensor, dict[str, Tensor]]:
        """The REINFORCE term with the baseline (+ the value head's MSE, weighted), and the
        figures it logs (``reward``, ``baseline``, ``advantage_var``, ``value_loss``)."""
        baseline = self.baseline(reward, extras.value)  # broadcastable to (b, s)
        loss = reinforce_loss(extras.policy_log_prob, reward, baseline)
        logged = {
            "reward": reward.mean(),
            "baseline": torch.as_tensor(baseline, dtype=reward.dtype).float().mean(),
            "advantage_var": (reward - baseline).var(unbiased=False),
        }
        if extras.value is not None:  # fit the value head that predicts the reward
            value_loss = (extras.value.unsqueeze(1) - reward).pow(2).mean()
            loss = loss + self.value_weight * value_loss
            logged["value_loss"] = value_loss.detach()
        return loss, logged

    def rewards(self, sample_logits: Tensor, answer: Tensor) -> tuple[Tensor, Tensor]:
        """The reward of each sampled reading and its cross-entropy.

        Args:
            sample_logits: candidate-masked answer logits of each sample, (b, s, e).
            answer: the answer entity ids, (b,).

        Returns:
            ``reward`` (b, s), detached: ``log p(answer)`` or ``1[argmax == answer]``; and
            ``nll`` (b, s), the per-sample cross-entropy (differentiable).
        """
        sample_logits = sample_logits.float()
        b, samples, e = sample_logits.shape
        answer = answer.unsqueeze(1).expand(b, samples)  # (b, s)
        nll = F.cross_entropy(
            sample_logits.reshape(b * samples, e), answer.reshape(-1), reduction="none"
        ).view(b, samples)  # (b, s)
        return self.reward(sample_logits, answer), nll


def _check_options(
    *,
    reward: str,
    baseline: str,
    selection: str,
    value_weight: float,
    policy_supervision: float,
    gumbel_temperature: float,
) -> None:
    """Raise a ``ValueError`` saying what to set for an option the reader cannot take."""
    check_choice("reward", reward, get_args(RewardName))
    check_choice("baseline", baseline, get_args(BaselineName))
    check_choice("selection", selection, get_args(SelectionName))
    if selection == "gumbel" and baseline != "none":
        raise ValueError(
            "selection='gumbel' trains the policy through the straight-through gradient, "
            f"without a baseline: set baseline='none' (got {baseline!r})"
        )
    for name, value in (("value_weight", value_weight), ("policy_supervision", policy_supervision)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    if gumbel_temperature <= 0:
        raise ValueError(f"gumbel_temperature must be > 0, got {gumbel_temperature}")


def _mean_answer(sample_logits: Tensor, candidates: Tensor) -> Tensor:
    """The candidate-masked log of the answer distribution averaged over the samples, (b, e),
    from each sample's logits (b, s, e); one sample's logits as they are."""
    samples = sample_logits.shape[1]
    if samples == 1:
        return sample_logits[:, 0]  # (b, e)
    log_mean = torch.logsumexp(sample_logits.float().log_softmax(-1), 1) - math.log(samples)
    return mask_logits(log_mean, candidates)  # (b, e)
