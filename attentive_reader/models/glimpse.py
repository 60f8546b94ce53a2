"""Glimpse readers: differentiable windows over the document (DRAW and spatial transformers).

Between soft attention (reads every token, differentiable) and hard attention (reads k
tokens, trained with REINFORCE) lie windows whose *location* is differentiable: the query
predicts where to look (a centre and a stride for ``N`` grid points), and the reader reads
the document states through a Gaussian filterbank (``GaussianGlimpseReader``, DRAW) or by
linear interpolation at the grid points (``TransformerGlimpseReader``, the spatial
transformer's sampler). Over ``K`` glimpses an LSTM-cell controller moves the window, a
differentiable counterpart of the recurrent visual attention model's sequence of looks. The
transformer glimpse can also place its grid from a coarse view of the whole document (chunk
means, trained by an answer-chunk loss) and read a retina of pooled windows around each point.
On long documents both can start their windows at anchors, where the query's words occur
densest (``anchors``); the locator then moves and sizes each window around its anchor.

The maths lives in ``attentive_reader/nn/glimpse.py``; this file wires it into readers.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import torch
from torch import Tensor, nn

from attentive_reader.common.checks import check_positive
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.data.vocab import Vocabulary
from attentive_reader.models.base import Stage
from attentive_reader.models.output import GlimpseExtras, ReaderOutput
from attentive_reader.models.parts import (
    PairReader,
    ReadoutName,
    build_readout,
    check_choice,
)
from attentive_reader.nn.answer import AnswerInput, AnswerLayerName
from attentive_reader.nn.attention import Attention, ScorerName, build_scorer
from attentive_reader.nn.features import query_match as query_match_features
from attentive_reader.nn.glimpse import (
    CoarseView,
    GlimpseParameters,
    anchored_grid,
    anchored_parameters,
    chunk_any,
    chunk_locator_loss,
    clamp_to_document,
    coarse_view,
    gaussian_filterbank,
    glimpse_parameters,
    grid_points,
    interpolation_weights,
    linear_sample,
    match_weights,
    position_weights,
    query_anchors,
    retina_read,
    sampled_mask,
    support_mask,
)

GlimpseReadoutName = Literal["attend", "flatten"]
SUPPORT_THRESHOLD = 1e-3  # a Gaussian filter weight above this counts as reading the token
# The locator's initial (g~, delta~, sigma~, gamma~): centre mid-document, stride
# sigmoid(3) = 0.95 of (L-1)/(N-1), width exp(-0.7) = 0.5 of L/N, intensity 1.
INITIAL_RAW = (0.0, 3.0, -0.7, 0.0)
# With anchors: centre on the anchor, the N points spanning anchor_span tokens, the width
# 1/2 + 3/2 sigmoid(-1.6) = 0.75 of the span per filter (one token for W = N), and intensity 1.
INITIAL_ANCHORED_RAW = (0.0, 0.0, -1.6, 0.0)
# The coarse locator's initial weight on a chunk's query-match fraction: a chunk of which half
# the tokens occur in the query starts e^2 ~ 7 times likelier than one without.
INITIAL_MATCH_WEIGHT = 4.0


class _GlimpseReader(PairReader):
    """What both glimpse readers share: encoders, the locator, the controller, the read-out.

    Per glimpse ``k = 1..K``, with ``u`` the query state and ``c_{k-1}`` the controller state
    (only when ``K > 1``; ``c_0 = 0``)::

        (g, delta, ...) = scaled(W_loc [u; c_{k-1}] + b_loc)     (nn/glimpse.py)
        G_k             = the N glimpse states, (N, 2h)          (subclass: filterbank/sampler)
        r_k             = sum_i a_i G_k[i], a = softmax_i score(G_k[i], u)  (glimpse_readout="attend")
                        | W_flat vec(G_k)                                  (glimpse_readout="flatten")
        c_k             = LSTMCell(r_k, c_{k-1})                 (K > 1)

    then ``r = r_1`` (K = 1) or ``r = c_K`` (K > 1), the read-out and the ``answer_layer``.
    With ``anchors = A`` the glimpse is ``A`` windows of ``N`` points, one per anchor ``a``
    (the ``A`` places where the query's words occur densest, ``nn/glimpse.py``
    ``query_anchors``), each centred at ``a + W/2 tanh(g~)`` with ``W = anchor_span``, and
    ``G_k`` holds their ``A N`` states;
    ``pointer`` answers from the last glimpse's weight on each token,
    ``w(t) = sum_i a_i W[i, t]`` for the glimpse's weights ``W`` (b, N, n). A subclass passes
    ``location_size`` (how many location values it predicts; derived, not saved) and
    implements :meth:`look`. ``docs/glimpse-readers.md`` tells the whole design.

    Args:
        scorer: the ``attend`` read-out's scorer (``nn/attention.py``).
        attention_dim: hidden size of the additive scorer (default ``2h``).
        readout: ``paper`` or ``linear`` (``Readout``).
        answer_layer: ``tied`` (the default), ``output`` or ``pointer`` (``attend`` only).
        num_filters: ``N``, filters (or sampling points) per glimpse.
        num_glimpses: ``K``; more than 1 adds the LSTM-cell controller that places each
            next glimpse from what the previous ones saw.
        glimpse_readout: ``attend`` (score the N glimpse states against the query and average
            them, as the Attentive Reader does with tokens) or ``flatten`` (DRAW's linear map
            of the concatenated N states).
        anchors: ``A``, windows per glimpse placed at the query-match anchors (0: off, one
            window placed over the whole document from the query). Needs ``num_glimpses`` 1.
        anchor_span: ``W``, the tokens an anchored window spans at the start; anchors are
            more than ``W/2`` apart, each the centre of the ``W + 1`` tokens with the most
            query-match weight.
        uniform_share: ``pointer`` only: the share ``s`` of the token weights spread evenly
            over the real tokens, ``w'(t) = (1 - s) w(t) + s / L`` (0: none). Windows that
            miss every mention of the answer then cost ``-log(s c / L)`` for ``c`` mentions
            instead of ``-log 1e-30``, whose gradient swamps the rest of the batch.
        **options: ``PairReader``'s and ``ClozeReader``'s.
    """

    derived_arguments = ("location_size",)

    def __init__(
        self,
        *,
        location_size: int,
        scorer: ScorerName = "bilinear",
        attention_dim: int | None = None,
        readout: ReadoutName = "linear",
        answer_layer: AnswerLayerName = "tied",
        num_filters: int = 8,
        num_glimpses: int = 1,
        glimpse_readout: GlimpseReadoutName = "attend",
        anchors: int = 0,
        anchor_span: int = 32,
        uniform_share: float = 0.0,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        check_positive(num_filters=num_filters, num_glimpses=num_glimpses)
        check_choice("glimpse_readout", glimpse_readout, get_args(GlimpseReadoutName))
        if not isinstance(anchors, int) or anchors < 0:
            raise ValueError(f"anchors must be 0 (off) or a positive integer, got {anchors!r}")
        if not isinstance(anchor_span, int) or anchor_span < 2:
            raise ValueError(f"anchor_span must be an integer >= 2, got {anchor_span!r}")
        if not 0.0 <= uniform_share < 1.0:
            raise ValueError(f"uniform_share must be in [0, 1), got {uniform_share}")
        if anchors and num_glimpses != 1:
            raise ValueError(
                f"anchors places one glimpse of {anchors} windows; it needs num_glimpses 1, "
                f"got {num_glimpses}"
            )
        self.num_filters = num_filters
        self.num_glimpses = num_glimpses
        self.glimpse_readout = glimpse_readout
        self.anchors = anchors
        self.anchor_span = anchor_span
        self.uniform_share = float(uniform_share)

        states = self.encoders.output_dim  # 2h
        recurrent = num_glimpses > 1
        # W_loc: from [u; c] (or u alone for one glimpse) to the unconstrained parameters.
        self.locator = nn.Linear(states * (2 if recurrent else 1), location_size)
        # Start every glimpse as an even scan of the whole document (the grid spans 95% of
        # it, neighbouring filters overlap at half their spacing); training then moves and
        # narrows it per query.
        nn.init.zeros_(self.locator.weight)
        with torch.no_grad():
            initial = INITIAL_ANCHORED_RAW if anchors else INITIAL_RAW
            self.locator.bias.copy_(torch.tensor(initial[:location_size]))
        self.controller = nn.LSTMCell(states, states) if recurrent else None
        if glimpse_readout == "attend":
            self.scorer = build_scorer(scorer, states, states, attention_dim)
            self.build_answer_layer(answer_layer, states)
        else:
            points = num_filters * max(anchors, 1)  # A N with anchors
            self.flatten = nn.Linear(points * states, states)  # W_flat
            self.build_answer_layer(
                answer_layer,
                states,
                ("output", "tied"),
                " with glimpse_readout='flatten' (it has no weights over tokens; use 'attend')",
            )
        self.readout = build_readout(readout, states, self.answer)

    def survey(self, batch: ClozeBatch, y_d: Tensor, mask: Tensor) -> CoarseView | None:
        """What the locator may see of the whole document before the first glimpse: ``None``
        (the query alone places it) unless a subclass builds a coarse view."""
        return None

    def anchor_positions(self, batch: ClozeBatch) -> Tensor | None:
        """The ``A`` anchors (b, A) long: the middles of the ``W + 1``-token windows holding
        the most query-match weight (``match_weights``, ``query_anchors``); ``None`` without
        ``anchors``."""
        if not self.anchors:
            return None
        mask = batch.context_mask
        weights = match_weights(batch.context, mask, batch.query, batch.query_mask)  # (b, n)
        return query_anchors(weights, mask, self.anchors, self.anchor_span // 2)  # (b, A)

    def place(
        self, raw: Tensor, lengths: Tensor, anchors: Tensor | None
    ) -> tuple[GlimpseParameters, Tensor]:
        """The glimpse's parameters and grid from the locator's raw output: over the whole
        document (``glimpse_parameters``; grid (b, N)) or around each anchor
        (``anchored_parameters``; centre (b, A), grid (b, A N))."""
        if anchors is None:
            params = glimpse_parameters(raw, lengths, self.num_filters)  # (b,) each
            return params, grid_points(params.centre, params.stride, self.num_filters)
        params = anchored_parameters(raw, anchors, self.num_filters, self.anchor_span)
        return params, anchored_grid(params, self.num_filters)  # (b, A N)

    def look(
        self,
        y_d: Tensor,
        mask: Tensor,
        lengths: Tensor,
        where: Tensor,
        view: CoarseView | None,
        anchors: Tensor | None,
    ) -> tuple[Tensor, Tensor, Tensor, dict[str, Tensor]]:
        """One glimpse (``N'`` states: ``N``, or ``A N`` with anchors).

        Args:
            y_d: (b, n, 2h) document states, 0 on padding.
            mask: (b, n) bool.
            lengths: (b,) true lengths.
            where: (b, 2h | 4h) the locator's input, ``u`` or ``[u; c_{k-1}]``.
            view: what :meth:`survey` returned.
            anchors: (b, A) what :meth:`anchor_positions` returned.

        Returns:
            ``glimpse`` (b, N', 2h); ``weights`` (b, N', n): each glimpse state as weights
            over the positions (for heatmaps); ``looked`` (b, n) bool: the tokens this
            glimpse looked at; and per-glimpse values for ``extras``, each (b, ...), stacked
            over glimpses by :meth:`forward`.
        """
        raise NotImplementedError

    def forward(self, batch: ClozeBatch) -> ReaderOutput:
        """Read a batch (letters as in ``ClozeBatch``; ``K`` glimpses of ``N`` filters).

        Returns:
            ``ReaderOutput`` with ``logits`` (b, e); ``attention`` (b, n): the weights of all
            filters of all glimpses summed and normalised to 1 over the real tokens; and
            ``extras`` holding each glimpse's parameters stacked as (b, K) or (b, K, N)
            (see the subclass), ``glimpse_attention`` (b, K, n) (the same normalisation per
            glimpse), ``filter_weights`` (b, K, N) (the read-out's weights over the filters,
            ``glimpse_readout="attend"`` only) and ``tokens_read`` (b,) long.
        """
        mask = batch.context_mask  # (b, n)
        encoded = self.encode(batch)
        y_d, u = encoded.document, encoded.query_final  # (b, n, 2h), (b, 2h)
        lengths = mask.sum(1)  # (b,)
        view = self.survey(batch, y_d, mask)
        anchors = self.anchor_positions(batch)  # (b, A) | None

        state: tuple[Tensor, Tensor] | None = None
        if self.controller is not None:
            zeros = u.new_zeros(u.shape)  # (b, 2h)
            state = (zeros, zeros)
        all_weights: list[Tensor] = []
        seen = torch.zeros_like(mask)  # (b, n) bool: tokens any glimpse looked at
        per_glimpse: dict[str, list[Tensor]] = {}
        r = u
        token_weights = None  # (b, n): the last glimpse's read-out weight on each token
        for _ in range(self.num_glimpses):
            where = u if state is None else torch.cat([u, state[0]], dim=-1)  # (b, 2h | 4h)
            glimpse, weights, looked, values = self.look(y_d, mask, lengths, where, view, anchors)
            seen = seen | looked
            r, filter_weights = self._combine(glimpse, u)  # (b, 2h), (b, N) | None
            if filter_weights is not None:
                values["filter_weights"] = filter_weights
                token_weights = torch.bmm(
                    filter_weights.unsqueeze(1).to(weights.dtype), weights
                ).squeeze(1)  # (b, n)
            if state is not None:
                state = self.controller(r, state)  # LSTMCell: (h, c), each (b, 2h)
                r = state[0]  # the reading is the controller's state, as in RAM
            all_weights.append(weights)
            for key, value in values.items():
                per_glimpse.setdefault(key, []).append(value)

        filters = torch.stack(all_weights, dim=1)  # (b, K, N, n)
        if token_weights is not None and self.uniform_share:
            even = mask.to(token_weights.dtype) / lengths.clamp_min(1).unsqueeze(-1)  # (b, n)
            share = self.uniform_share
            token_weights = (1 - share) * token_weights + share * even  # (b, n)
        log_weights = (
            None if token_weights is None else token_weights.float().clamp_min(1e-30).log()
        )
        given = AnswerInput(vector=r, query=u, weights=token_weights, token_scores=log_weights)
        stacked = {key: torch.stack(values, dim=1) for key, values in per_glimpse.items()}
        pooled = stacked.pop("pooled", None)  # (b, K, n): tokens read only in a pooled window
        extras = GlimpseExtras(
            glimpse_attention=torch.stack(
                [position_weights(w, mask) for w in all_weights], dim=1
            ),  # (b, K, n)
            tokens_read=seen.sum(-1),  # (b,)
            read_mask=seen,  # (b, n)
            tokens_pooled=None if pooled is None else pooled.any(1).sum(-1),  # (b,)
            anchors=anchors,
            **stacked,
        )
        attention = position_weights(filters, mask)  # (b, n)
        return ReaderOutput(self.answer_scores(batch, given), attention=attention, extras=extras)

    def step_loss(self, batch: ClozeBatch, output: ReaderOutput, stage: Stage) -> Tensor:
        """The cross-entropy plus, in training, the locator's loss (``auxiliary_loss``, logged
        as ``train_locator_loss``); in validation and test, logs what the glimpses read
        (``log_reading``)."""
        loss = super().step_loss(batch, output, stage)
        if stage != "train":
            self.log_reading(batch, output.extras, stage)
            return loss
        extra = self.auxiliary_loss(batch, output)
        if extra is None:
            return loss
        size = len(batch)
        self.log("train_locator_loss", extra, on_epoch=True, sync_dist=True, batch_size=size)
        return loss + extra

    def auxiliary_loss(self, batch: ClozeBatch, output: ReaderOutput) -> Tensor | None:
        """A loss added to the cross-entropy in training (None: none)."""
        return None

    def reading_mask(self, batch: ClozeBatch, output: ReaderOutput) -> Tensor:
        """The tokens any glimpse read at full resolution (``tokens_read``; the Gaussian
        filters' support above ``SUPPORT_THRESHOLD``); tokens only inside a pooled retina
        window (``tokens_pooled``) or a coarse view's chunk mean are not counted."""
        extras = output.extras
        assert isinstance(extras, GlimpseExtras) and extras.read_mask is not None
        return extras.read_mask

    def log_reading(self, batch: ClozeBatch, extras: GlimpseExtras, stage: str) -> None:
        """Log the epoch's mean tokens read per example, the mean document length, and the
        share of examples where a glimpse's weights reach a mention of the answer."""
        size = len(batch)
        answer_token = Vocabulary.entity_offset + batch.answer  # (b,)
        looked = extras.glimpse_attention.sum(1) > 0  # (b, n)
        answer_read = ((batch.context == answer_token.unsqueeze(-1)) & looked).any(-1)  # (b,)
        for name, value in (
            ("tokens_read", extras.tokens_read),
            ("answer_read", answer_read),
            ("tokens_pooled", extras.tokens_pooled),
            ("doc_tokens", batch.context_mask.sum(1)),
        ):
            if value is not None:
                mean = value.float().mean()
                self.log(f"{stage}_{name}", mean, on_epoch=True, sync_dist=True, batch_size=size)

    def _combine(self, glimpse: Tensor, u: Tensor) -> tuple[Tensor, Tensor | None]:
        """The reading ``r`` (b, 2h) of one glimpse (b, N, 2h), and the filter weights."""
        if self.glimpse_readout == "flatten":
            return self.flatten(glimpse.flatten(1)), None  # (b, 2h)
        every = torch.ones(glimpse.shape[:2], dtype=torch.bool, device=glimpse.device)  # (b, N)
        a = self.scorer(glimpse, u, every).weights  # (b, N)
        return torch.bmm(a.unsqueeze(1), glimpse).squeeze(1), a  # (b, 2h), (b, N)


class GaussianGlimpseReader(_GlimpseReader):
    """Reads the document through a Gaussian filterbank whose place the query decides (DRAW).

    Per glimpse, with ``L`` the document's true length and ``t = 0..L-1``::

        g = (L-1) sigmoid(g~),  delta = (L-1)/(N-1) sigmoid(delta~),
        sigma = L/N exp(sigma~),  gamma = exp(gamma~)  (intensity=True; else gamma = 1)
        mu_i    = g + (i - N/2 - 0.5) delta,                      i = 1..N
        F[i, t] = exp(-(t - mu_i)^2 / (2 sigma^2)) / sum_{real t'} exp(-(t' - mu_i)^2 / (2 sigma^2))
        G       = gamma F y_d                                     (N, 2h)

    then ``_GlimpseReader``'s read-out. ``extras`` (``GlimpseExtras``): ``centre``,
    ``stride``, ``width`` (and ``intensity``) (b, K), ``points`` (b, K, N) (the ``mu_i``),
    and ``tokens_read``: positions where some filter weighs above ``SUPPORT_THRESHOLD``.

    Args:
        intensity: predict DRAW's intensity ``gamma`` and scale each glimpse by it (off by
            default: it can shrink to 0 early in training and silence the read-out; see
            ``docs/glimpse-readers.md``).
        **options: ``_GlimpseReader``'s (``num_filters``, ``num_glimpses``, ``scorer``, ...)
            and those it passes on.
    """

    def __init__(self, *, intensity: bool = False, **options: Any) -> None:
        # The locator predicts centre, stride, width (and the intensity).
        super().__init__(location_size=4 if intensity else 3, **options)
        self.intensity = intensity

    def look(
        self,
        y_d: Tensor,
        mask: Tensor,
        lengths: Tensor,
        where: Tensor,
        view: CoarseView | None,
        anchors: Tensor | None,
    ) -> tuple[Tensor, Tensor, Tensor, dict[str, Tensor]]:
        params, mu = self.place(self.locator(where), lengths, anchors)  # mu: (b, N')
        filters = gaussian_filterbank(mu, params.width, mask)  # (b, N', n)
        glimpse = torch.bmm(filters.to(y_d.dtype), y_d)  # (b, N', 2h)
        if self.intensity:
            glimpse = glimpse * params.intensity.to(y_d.dtype).view(-1, 1, 1)  # gamma F y_d
        values = {
            "centre": params.centre,
            "stride": params.stride,
            "width": params.width,
            "points": mu,
        }
        if self.intensity:
            values["intensity"] = params.intensity
        return glimpse, filters, support_mask(filters, SUPPORT_THRESHOLD), values


class TransformerGlimpseReader(_GlimpseReader):
    """Reads the document at N fractional positions by linear interpolation (spatial transformer).

    Per glimpse, with ``L`` the document's true length::

        g = (L-1) sigmoid(g~),  delta = (L-1)/(N-1) sigmoid(delta~)
        p_i  = clamp(g + (i - N/2 - 0.5) delta, 0, L-1),                     i = 1..N
        G[i] = (1 - frac_i) y_d(floor p_i) + frac_i y_d(floor p_i + 1),     frac_i = p_i - floor p_i

    then ``_GlimpseReader``'s read-out: at most ``2N`` tokens a glimpse at full resolution,
    the gradient reaching ``g`` and ``delta`` through ``frac_i``. With ``coarse_chunk = C``
    the locator first reads chunk means of ``C`` tokens (Ba et al.'s context network) and
    places the centre at the chunks' mean position under ``a_j = softmax_j(C score(s_j, v) +
    w_q q_j)``, ``q_j`` the chunk's share of query words; with ``retina_widths`` each point
    also reads pooled windows around it (RAM's glimpse sensor), ``G[i] += W_ret [P_1[i]; ...]``.
    ``docs/glimpse-readers.md`` has the equations and ``extras`` (``GlimpseExtras``).

    Args:
        scorer: the ``attend`` scorer and the coarse view's (``_GlimpseReader``).
        attention_dim: hidden size of the additive scorer (default ``2h``).
        coarse_chunk: ``C``, tokens per chunk of the coarse view (0: none; the query alone
            places the grid).
        retina_widths: widths of the pooled windows around each point (empty: none).
        locator_supervision: weight of the training loss ``-log`` of the first glimpse's
            chunk weight on the chunks holding the training answer (0: off; needs
            ``coarse_chunk``). It never sees a validation or test answer.
        **options: ``_GlimpseReader``'s and those it passes on.
    """

    def __init__(
        self,
        *,
        scorer: ScorerName = "bilinear",
        attention_dim: int | None = None,
        coarse_chunk: int = 0,
        retina_widths: list[int] | None = None,
        locator_supervision: float = 0.0,
        **options: Any,
    ) -> None:
        # The locator predicts the centre and the stride.
        super().__init__(location_size=2, scorer=scorer, attention_dim=attention_dim, **options)
        widths = tuple(retina_widths or ())
        if not isinstance(coarse_chunk, int) or coarse_chunk < 0:
            raise ValueError(
                f"coarse_chunk must be 0 (off) or a positive integer, got {coarse_chunk!r}"
            )
        if any(not isinstance(w, int) or w < 2 for w in widths):
            raise ValueError(f"retina_widths must be integers >= 2, got {list(widths)}")
        if locator_supervision < 0 or (locator_supervision > 0 and not coarse_chunk):
            raise ValueError(
                "locator_supervision must be >= 0 and needs coarse_chunk > 0, got "
                f"{locator_supervision} with coarse_chunk={coarse_chunk}"
            )
        if coarse_chunk and self.anchors:
            raise ValueError(
                "coarse_chunk and anchors are two ways to place the grid; set one of them to 0"
            )
        self.coarse_chunk = coarse_chunk
        self.retina_widths = widths
        self.locator_supervision = float(locator_supervision)
        states = self.encoders.output_dim  # 2h
        if coarse_chunk:
            self.coarse_scorer = build_scorer(scorer, states, states, attention_dim)
            self.match_weight = nn.Parameter(torch.tensor(INITIAL_MATCH_WEIGHT))  # w_q
            with torch.no_grad():  # delta = 2 sigmoid(0) = 1 token at the start
                self.locator.bias.zero_()
            self.coarse_query = (
                nn.Linear(2 * states, states) if self.controller is not None else None
            )  # W_v
        if widths:
            self.retina = nn.Linear(len(widths) * states, states, bias=False)  # W_ret
            nn.init.zeros_(self.retina.weight)

    def survey(self, batch: ClozeBatch, y_d: Tensor, mask: Tensor) -> CoarseView | None:
        if not self.coarse_chunk:
            return None
        in_query, _ = query_match_features(
            batch.context, batch.context_mask, batch.query, batch.query_mask
        )  # (b, n)
        return coarse_view(y_d, mask, in_query, self.coarse_chunk)  # (b, J, 2h), ...

    def look(
        self,
        y_d: Tensor,
        mask: Tensor,
        lengths: Tensor,
        where: Tensor,
        view: CoarseView | None,
        anchors: Tensor | None,
    ) -> tuple[Tensor, Tensor, Tensor, dict[str, Tensor]]:
        raw = self.locator(where)  # (b, 2)
        values: dict[str, Tensor] = {}
        if view is None:
            params, points = self.place(raw, lengths, anchors)  # points: (b, N')
            centre, stride = params.centre, params.stride  # (b,) | (b, A), (b,)
        else:
            v = where if self.coarse_query is None else self.coarse_query(where)  # (b, 2h)
            # Scaled by C: for the bilinear scorer a chunk's score is then the sum of its
            # tokens' scores, not their mean (a C times flatter start).
            scores = self.coarse_chunk * self.coarse_scorer.score(view.states, v)  # (b, J)
            scores = scores.float() + self.match_weight * view.match  # (b, J)
            chunk_weights = Attention.of(scores, view.mask).weights  # (b, J)
            centre = (chunk_weights * view.centres).sum(-1)  # (b,)
            stride = 2 * torch.sigmoid(raw[:, 1].float())  # (b,)
            values["chunk_attention"] = chunk_weights
            points = grid_points(centre, stride, self.num_filters)  # (b, N)
        if self.retina_widths:
            sampled, pooled = retina_read(y_d, points, lengths, mask, self.retina_widths)
            o = y_d.shape[-1]  # (b, N, (1 + R) 2h): the interpolated state, then the windows
            glimpse = sampled[..., :o] + self.retina(sampled[..., o:])  # (b, N, 2h)
            values["pooled"] = pooled
        else:
            glimpse = linear_sample(y_d, points, lengths)  # (b, N, 2h)
        weights = interpolation_weights(points, lengths, mask.shape[1])  # (b, N, n)
        values |= {"centre": centre, "stride": stride, "points": clamp_to_document(points, lengths)}
        return glimpse, weights, sampled_mask(points, lengths, mask.shape[1]), values

    def auxiliary_loss(self, batch: ClozeBatch, output: ReaderOutput) -> Tensor | None:
        if not self.locator_supervision:
            return None
        answer_token = Vocabulary.entity_offset + batch.answer  # (b,)
        is_answer = (batch.context == answer_token.unsqueeze(-1)) & batch.context_mask  # (b, n)
        target = chunk_any(is_answer, self.coarse_chunk)  # (b, J)
        first = output.extras.chunk_attention[:, 0]  # (b, J)
        return self.locator_supervision * chunk_locator_loss(first, target)
