"""The hard-attention reader: picks k document tokens and reads only those (REINFORCE).

Soft attention reads every token a little; this reader samples positions from a policy over
the document, reads the chosen hidden states, and learns where to look from the reward of its
answer with the score-function estimator (``nn/reinforce.py``). A straight-through
Gumbel-softmax selection is available behind the same interface as a differentiable control.
"""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

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
from attentive_reader.nn.attention import ScorerName, build_scorer
from attentive_reader.nn.masking import mask_logits, masked_log_softmax, masked_softmax
from attentive_reader.nn.reinforce import (
    EntropySchedule,
    MovingAverageBaseline,
    leave_one_out_baseline,
    policy_entropy,
    reinforce_loss,
)
from attentive_reader.nn.selection import Selection, SelectionStrategy, select_positions

RewardName = Literal["log_likelihood", "correct"]
BaselineName = Literal["none", "ema", "learned", "leave_one_out"]
EvalModeName = Literal["greedy", "sample", "expected", "uniform"]
EXPECTED_CHUNK = 64  # positions answered at once by eval_mode="expected" (bounds its memory)
SelectionName = Literal["reinforce", "gumbel"]


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
        check_choice("reward", reward, get_args(RewardName))
        check_choice("baseline", baseline, get_args(BaselineName))
        check_choice("eval_mode", eval_mode, get_args(EvalModeName))
        check_choice("selection", selection, get_args(SelectionName))
        check_positive(k=k, num_samples=num_samples, eval_samples=eval_samples)
        if baseline == "leave_one_out" and num_samples < 2:
            raise ValueError(
                "baseline='leave_one_out' needs num_samples >= 2 (it averages the rewards of "
                f"the other samples of each example), got num_samples={num_samples}"
            )
        if selection == "gumbel" and baseline != "none":
            raise ValueError(
                "selection='gumbel' trains the policy through the straight-through gradient, "
                f"without a baseline: set baseline='none' (got {baseline!r})"
            )
        if eval_mode == "expected" and k != 1:
            raise ValueError(
                "eval_mode='expected' averages over single positions and needs k=1 (over k "
                f"positions there are too many selections to sum), got k={k}; use "
                "eval_mode='sample' for k > 1"
            )
        if value_weight < 0:
            raise ValueError(f"value_weight must be >= 0, got {value_weight}")
        if gumbel_temperature <= 0:
            raise ValueError(f"gumbel_temperature must be > 0, got {gumbel_temperature}")
        if policy_supervision < 0:
            raise ValueError(f"policy_supervision must be >= 0, got {policy_supervision}")
        self.policy_supervision = policy_supervision
        self.k = k
        self.replacement = replacement
        self.num_samples = num_samples
        self.reward_name = reward
        self.baseline_name = baseline
        self.value_weight = value_weight
        self.eval_mode = eval_mode
        self.eval_samples = eval_samples
        self.selection = selection
        self.gumbel_temperature = gumbel_temperature
        self.entropy_schedule = EntropySchedule(entropy_bonus, entropy_decay)
        self.moving_average = MovingAverageBaseline(baseline_decay)

        states = self.encoders.output_dim  # 2h
        self.scorer = build_scorer(scorer, states, states, attention_dim)
        self.readout = Readout(readout, states)
        self.build_answer_layer(
            answer_layer,
            states,
            why=" (it reads k sampled positions; the soft policy would make it a soft reader)",
        )
        self.value_head = (
            nn.Sequential(nn.Linear(2 * states, states), nn.Tanh(), nn.Linear(states, 1))
            if baseline == "learned"
            else None
        )

    # --- reading -------------------------------------------------------------------------

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch (letters as in ``ClozeBatch``; ``s`` samples, ``k`` positions).

        In training mode, ``num_samples`` selections are drawn per example (sampled, or
        Gumbel-softmax); in evaluation mode ``eval_mode`` decides. ``logits`` are the
        candidate-masked log of the answer distribution averaged over the samples (with one
        sample: that sample's logits).
        """
        mask = batch.context_mask  # (b, n)
        encoded = self.encode(batch)
        y_d, u = encoded.document, encoded.query_final  # (b, n, 2h), (b, 2h)
        scores = self.scorer.score(y_d, u).float()  # (b, n)
        log_policy = masked_log_softmax(scores, mask)  # (b, n)
        policy = masked_softmax(scores, mask)  # (b, n)

        strategy, samples = self._strategy()
        b, n = mask.shape
        flat_log_policy = log_policy.repeat_interleave(samples, dim=0)  # (b*s, n)
        flat_mask = mask.repeat_interleave(samples, dim=0)  # (b*s, n)
        if strategy == "uniform":  # ignore the policy: every real token equally likely
            flat_log_policy = masked_log_softmax(torch.zeros_like(flat_log_policy), flat_mask)
            strategy = "sample"
        chosen: Selection = select_positions(
            flat_log_policy,
            flat_mask,
            self.k,
            strategy=strategy,
            replacement=self.replacement,
            temperature=self.gumbel_temperature,
        )
        weights = chosen.weights.to(y_d.dtype).view(b, samples, n)  # (b, s, n)
        r = torch.bmm(weights, y_d).flatten(0, 1)  # (b*s, 2h): the mean of the chosen states
        flat_u = u.repeat_interleave(samples, dim=0)  # (b*s, 2h)
        candidates = batch.candidates.repeat_interleave(samples, dim=0)  # (b*s, e)
        given = AnswerInput(vector=r, query=flat_u, weights=weights)
        sample_logits = self.answer_scores(batch, given, candidates)  # (b*s, e)
        sample_logits = sample_logits.view(b, samples, -1)  # (b, s, e)
        if strategy == "greedy" and self.eval_mode == "expected":
            logits = self._expected_logits(batch, y_d, u, log_policy)  # (b, e)
            sample_logits = logits.unsqueeze(1)  # (b, 1, e): the one "reading" reported
        elif samples == 1:
            logits = sample_logits[:, 0]  # (b, e)
        else:  # log of the mean answer distribution over the samples
            log_mean = torch.logsumexp(sample_logits.float().log_softmax(-1), 1) - math.log(samples)
            logits = mask_logits(log_mean, batch.candidates)  # (b, e)

        positions = chosen.positions.masked_fill(~chosen.valid, -1).view(b, samples, self.k)
        value = None
        if self.value_head is not None:
            lengths = mask.sum(1, keepdim=True).clamp_min(1).to(y_d.dtype)  # (b, 1)
            mean_state = y_d.sum(1) / lengths  # (b, 2h); y_d is 0 on padding
            features = torch.cat([u, mean_state], dim=-1).detach()  # (b, 4h)
            value = self.value_head(features).squeeze(-1).float()  # (b,)
        extras = HardExtras(
            policy_log_prob=chosen.log_prob.view(b, samples),  # (b, s)
            sample_logits=sample_logits,  # (b, s, e)
            samples_selected=positions,  # (b, s, k)
            entropy=policy_entropy(log_policy, mask),  # (b,)
            policy_scores=scores,  # (b, n) the policy's unnormalised log-weights
            value=value,
        )
        return ReaderOutput(
            logits=logits, attention=policy, selected=positions[:, 0], extras=extras
        )

    def _strategy(self) -> tuple[SelectionStrategy | Literal["uniform"], int]:
        """The selection strategy and the number of samples for the current mode."""
        if self.training:
            return ("gumbel" if self.selection == "gumbel" else "sample"), self.num_samples
        if self.eval_mode in ("greedy", "expected"):  # expected: selected = the top position
            return "greedy", 1
        return self.eval_mode, self.eval_samples

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

        if self.selection == "reinforce":
            baseline = self._baseline(reward, extras)  # broadcastable to (b, s)
            loss = loss + reinforce_loss(extras.policy_log_prob, reward, baseline)
            advantage = reward - baseline
            if extras.value is not None:
                value_loss = (extras.value.unsqueeze(1) - reward).pow(2).mean()
                loss = loss + self.value_weight * value_loss
                logged["value_loss"] = value_loss.detach()
            logged |= {
                "reward": reward.mean(),
                "baseline": torch.as_tensor(baseline, dtype=reward.dtype).float().mean(),
                "advantage_var": advantage.var(unbiased=False),
            }

        entropy = extras.entropy.mean()
        weight = self.entropy_schedule(self.global_step)
        if weight > 0:
            loss = loss - weight * entropy
        logged |= {"entropy": entropy.detach(), "entropy_weight": weight}
        logged = {f"train_{name}": value for name, value in logged.items()}
        self.log_dict(logged, on_step=True, on_epoch=False, sync_dist=True, batch_size=len(batch))
        return loss

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
        if self.reward_name == "log_likelihood":
            reward = -nll.detach()
        else:
            reward = (sample_logits.argmax(-1) == answer).to(nll.dtype)
        return reward, nll

    def _baseline(self, reward: Tensor, extras: HardExtras) -> Tensor:
        """The configured baseline for ``reward`` (b, s), detached, broadcastable to it."""
        if self.baseline_name == "ema":
            value = self.moving_average().to(reward.dtype)  # before seeing this batch
            self.moving_average.update(reward)
            return value
        if self.baseline_name == "learned":
            assert extras.value is not None  # the learned baseline has a value head
            return extras.value.detach().unsqueeze(1)  # (b, 1)
        if self.baseline_name == "leave_one_out":
            return leave_one_out_baseline(reward)  # (b, s)
        return torch.zeros((), dtype=reward.dtype, device=reward.device)
