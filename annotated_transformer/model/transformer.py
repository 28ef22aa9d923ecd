"""The Transformer of "Attention Is All You Need" (section 3, Figure 1)."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from ..runtime.compat import is_compiling, is_vmapped
from .attention import KVCache, MultiHeadAttention
from .config import TransformerConfig
from .layers import DecoderLayer, Dropout, EncoderLayer, PositionalEncoding

# The integer dtypes an embedding looks token ids up with.
ID_DTYPES = (torch.int64, torch.int32)


def values_readable(tensor: torch.Tensor) -> bool:
    """Whether `tensor`'s values may be read back to Python here: not while torch.compile or the
    ONNX exporter traces the model (a graph break, or a constant baked in), a CUDA graph captures
    it (no host synchronisation may happen), inside `torch.func.vmap`, or on the meta device."""
    if tensor.device.type == "meta" or is_compiling() or torch.jit.is_tracing():
        return False
    if tensor.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        return False
    return not is_vmapped(tensor)


@dataclass
class DecoderState:
    """What incremental decoding carries from one step to the next."""

    src_mask: torch.Tensor
    memory_kv: list[tuple[torch.Tensor, torch.Tensor]]
    caches: list[KVCache]
    length: int = 0
    # Set by a decoder that feeds back only ids it picked from the model's own logits: decode()
    # then reads no step's ids back to check them (on a GPU, a wait for the device every step).
    own_ids: bool = False

    def reorder(self, index: torch.Tensor, *, same_source: bool = False) -> None:
        """Follow beam search's choice of parent beams (rows of the batch).

        same_source: every row's parent decodes the same source as the row itself (beam search picks
        parents among one sentence's beams), so the source mask and the encoder's keys and values,
        identical across those rows, stay where they are and only the self-attention caches move.
        """
        for cache in self.caches:
            cache.reorder(index)
        if same_source:
            return
        self.src_mask = self.src_mask.index_select(0, index)
        self.memory_kv = [
            (k.index_select(0, index), v.index_select(0, index))
            for k, v in self.memory_kv
        ]


class Transformer(nn.Module):
    """Encoder-decoder Transformer with post-norm layers and three-way weight tying (section 3.4).

    `config.norm_position="pre"` builds pre-norm layers instead, with a final LayerNorm on each stack.

    `model(src, tgt_in)` returns logits (batch, tgt_len, tgt_vocab). Padding in `src` is
    `config.pad_id`; the decoder is causal, so target padding needs no mask (it only follows
    real tokens, and the loss ignores it). `model(src, tgt_in, only_at=tgt_out != pad_id)` returns
    (n, tgt_vocab) logits for the True positions only, in row-major order: the output projection
    is the largest matrix product of a step at a 37k vocabulary, and padded positions feed nothing.
    """

    def __init__(
        self,
        config: TransformerConfig,
        src_vocab_size: int,
        tgt_vocab_size: int,
        share_embeddings: bool = True,
    ):
        super().__init__()
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(
                f"share_embeddings needs one shared vocabulary, got src_vocab_size={src_vocab_size} "
                f"and tgt_vocab_size={tgt_vocab_size}"
            )
        for name, size in (
            ("src_vocab_size", src_vocab_size),
            ("tgt_vocab_size", tgt_vocab_size),
        ):
            if size <= max(config.pad_id, config.bos_id, config.eos_id, config.unk_id):
                raise ValueError(
                    f"{name}={size} must exceed every special id of the config"
                )
        self.config = config
        c = config
        self.share_embeddings = share_embeddings
        self.src_embed = nn.Embedding(src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = (
            self.src_embed
            if share_embeddings
            else nn.Embedding(tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        )
        self.src_positions = PositionalEncoding(c.d_model, c.max_len, c.positional)
        # Learned positions are per stack; sinusoids are the same function, shared.
        self.tgt_positions = (
            PositionalEncoding(c.d_model, c.max_len, c.positional)
            if c.positional == "learned"
            else self.src_positions
        )
        self.dropout = Dropout(c.dropout)
        dk, dv = c.head_dim_k, c.head_dim_v
        norm = dict(norm_position=c.norm_position)
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.d_ff, c.n_heads, dk, dv, c.dropout, **norm)
            for _ in range(c.encoder_layers)
        )
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(c.d_model, c.d_ff, c.n_heads, dk, dv, c.dropout, **norm)
            for _ in range(c.decoder_layers)
        )
        # Pre-norm layers add to an unnormalised residual stream, so each stack ends in a LayerNorm;
        # post-norm layers end in one already (Identity keeps post-norm state dicts as they were).
        pre = c.norm_position == "pre"
        self.encoder_norm = nn.LayerNorm(c.d_model) if pre else nn.Identity()
        self.decoder_norm = nn.LayerNorm(c.d_model) if pre else nn.Identity()
        self.generator = nn.Linear(c.d_model, tgt_vocab_size, bias=False)
        self._reset_parameters()
        self.generator.weight = (
            self.tgt_embed.weight
        )  # pre-softmax projection tied to the embeddings

    def _reset_parameters(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        # With the sqrt(d_model) scale of section 3.4, std d_model^-0.5 gives unit-variance inputs.
        # A list, source first: a set of the two modules would order them by memory address, so
        # separate embeddings (the parser) got another initialisation from run to run.
        embeddings = [self.src_embed]
        if self.tgt_embed is not self.src_embed:
            embeddings.append(self.tgt_embed)
        for emb in embeddings:
            nn.init.normal_(emb.weight, std=self.config.d_model**-0.5)
            with torch.no_grad():
                emb.weight[self.config.pad_id].zero_()

    # ------------------------------------------------------------------ encoder
    def source_mask(self, src: torch.Tensor) -> torch.Tensor:
        """(B, 1, 1, S) boolean, True where the key is a real token."""
        return (src != self.config.pad_id)[:, None, None, :]

    # ------------------------------------------------------------------ input checks
    # Shapes and dtypes are Python facts, free, and torch.compile turns them into guards and ONNX
    # tracing into constants instead of graph breaks. The ids' values cost one min/max reduction
    # and one read-back per call, skipped where nothing may be read back (`values_readable`).
    def _check_tokens(
        self,
        name: str,
        tokens: torch.Tensor,
        start: int = 0,
        *,
        values: bool = True,
    ) -> None:
        """A (B, length) batch of integer ids the embedding holds, whose positions
        start..start+length-1 all exist: past max_len a learned table has no row and sinusoids
        give positions no training ever saw. An id outside the vocabulary would fail deep inside
        the embedding (an index error, or a device-side assert on a GPU), a float id would be
        refused there with another message; `values=False` checks the shape and dtype only."""
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
            got = (
                f"shape {tuple(tokens.shape)}"
                if isinstance(tokens, torch.Tensor)
                else type(tokens).__name__
            )
            raise ValueError(
                f"{name} must be a (batch, length) tensor of token ids, got {got}: add the "
                "batch dimension (tokens[None]) for one sequence"
            )
        if tokens.dtype not in ID_DTYPES:
            raise ValueError(
                f"{name} must hold integer token ids (torch.long or torch.int32), got "
                f"{tokens.dtype}: encode text with the model's tokenizer, or convert whole-number "
                "ids with .long()"
            )
        if values:
            self._check_ids(((name, tokens),))
        end = start + tokens.size(1)
        if end > self.config.max_len:
            reach = f"positions {start}..{end - 1}" if start else f"{end} positions"
            raise ValueError(
                f"{name} {tuple(tokens.shape)} reaches {reach}, past the model's "
                f"max_len={self.config.max_len}: cut the sequence to {self.config.max_len} "
                "tokens, or build the model with a larger max_len (sinusoidal positions load "
                "the same weights at any max_len)"
            )

    def _check_ids(self, named: tuple[tuple[str, torch.Tensor], ...]) -> None:
        """Every id of each (name, ids) inside its embedding's vocabulary: one min/max reduction
        per tensor and one read-back for them all (on a GPU, one wait for the device)."""
        named = tuple((n, t) for n, t in named if t.numel() and values_readable(t))
        if not named:
            return
        bounds = torch.stack(
            [b.long() for _, t in named for b in torch.aminmax(t)]
        ).tolist()
        for i, (name, _) in enumerate(named):
            low, high = bounds[2 * i], bounds[2 * i + 1]
            vocab = (self.src_embed if name == "src" else self.tgt_embed).num_embeddings
            if low < 0 or high >= vocab:
                raise ValueError(
                    f"{name} holds token id {low if low < 0 else high}, outside the model's "
                    f"vocabulary 0..{vocab - 1}: encode with the checkpoint's own tokenizer"
                )

    @staticmethod
    def _check_only_at(only_at: torch.Tensor | None, tgt_in: torch.Tensor) -> None:
        if only_at is not None and (
            not isinstance(only_at, torch.Tensor)
            or only_at.shape != tgt_in.shape
            or only_at.dtype != torch.bool
        ):
            got = (
                f"{only_at.dtype} {tuple(only_at.shape)}"
                if isinstance(only_at, torch.Tensor)
                else type(only_at).__name__
            )
            raise ValueError(
                f"only_at must be a boolean tensor shaped like tgt_in {tuple(tgt_in.shape)}, "
                f"got {got}"
            )

    @staticmethod
    def _check_pair(src: torch.Tensor, tgt_in: torch.Tensor) -> None:
        """Sources and targets of one batch: a single source would otherwise be broadcast
        against every target row (and other counts fail deep in cross-attention)."""
        if (
            isinstance(src, torch.Tensor)
            and isinstance(tgt_in, torch.Tensor)
            and src.dim() == 2
            and tgt_in.dim() == 2
            and src.size(0) != tgt_in.size(0)
        ):
            raise ValueError(
                f"src {tuple(src.shape)} and tgt_in {tuple(tgt_in.shape)} have {src.size(0)} "
                f"and {tgt_in.size(0)} rows: pass one target row per source row (row i of "
                "tgt_in is the translation of row i of src)"
            )

    @staticmethod
    def _check_mask(
        name: str, mask: torch.Tensor | None, batch: int, length: int | None, of: str
    ) -> None:
        """A source mask (B, 1, 1, S) for `batch` rows and, when given, `length` keys; a mask
        of another batch would otherwise broadcast silently (one row's mask for every row)."""
        if mask is None:
            return
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise ValueError(
                f"{name} must be a boolean mask, True where a key may be attended to, got "
                f"{got}: build it with model.source_mask(src) (an additive float mask is not "
                "taken: it would be added to the scores, not obeyed)"
            )
        if (
            mask.dim() != 4
            or mask.size(0) != batch
            or (length is not None and mask.size(-1) != length)
        ):
            want = f"({batch}, 1, 1, {length if length is not None else 'S'})"
            raise ValueError(
                f"{name} {tuple(mask.shape)} does not fit the {batch} rows of {of}: it must be "
                f"{want}, as model.source_mask(src) of the same batch of sources gives"
            )

    def embed(
        self,
        tokens: torch.Tensor,
        embedding: nn.Embedding,
        positions: PositionalEncoding,
        start: int = 0,
    ):
        x = embedding(tokens) * math.sqrt(self.config.d_model)
        return self.dropout(positions(x, start))

    def encode(
        self, src: torch.Tensor, src_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Encoder output (B, S, d_model) for source ids (B, S)."""
        self._check_tokens("src", src)
        if src_mask is None:
            src_mask = self.source_mask(src)
        else:
            self._check_mask("src_mask", src_mask, src.size(0), src.size(1), "src")
        return self._encoder(src, src_mask)

    def _encoder(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """The encoder's layers over ids and a mask already checked."""
        x = self.embed(src, self.src_embed, self.src_positions)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return self.encoder_norm(x)

    # ------------------------------------------------------------------ decoder
    def decode(
        self,
        tgt_in: torch.Tensor,
        memory: torch.Tensor | None,
        src_mask: torch.Tensor,
        state: DecoderState | None = None,
        only_at: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits for target ids (B, T). With `state`, tgt_in holds only the new positions.

        `only_at`, a boolean (B, T), keeps the positions where it is True: (n, V) logits.
        """
        start = state.length if state is not None else 0
        own_ids = state is not None and state.own_ids
        self._check_tokens("tgt_in", tgt_in, start, values=not own_ids)
        self._check_only_at(only_at, tgt_in)
        batch = tgt_in.size(0)
        if state is not None:
            self._check_mask(
                "the decoder state's src_mask", state.src_mask, batch, None, "tgt_in"
            )
        else:
            if (
                not isinstance(memory, torch.Tensor)
                or memory.dim() != 3
                or memory.size(0) != batch
            ):
                got = (
                    str(tuple(memory.shape))
                    if isinstance(memory, torch.Tensor)
                    else type(memory).__name__
                )
                raise ValueError(
                    f"memory {got} must be the encoder's output (B, S, d_model) for the "
                    f"{batch} rows of tgt_in {tuple(tgt_in.shape)}: encode the same batch of "
                    "sources as the targets"
                )
            self._check_mask("src_mask", src_mask, batch, memory.size(1), "memory")
        return self._decoder(tgt_in, memory, src_mask, state, only_at)

    def _decoder(
        self,
        tgt_in: torch.Tensor,
        memory: torch.Tensor | None,
        src_mask: torch.Tensor,
        state: DecoderState | None,
        only_at: torch.Tensor | None,
    ) -> torch.Tensor:
        """The decoder's layers and the output projection over inputs already checked."""
        start = state.length if state is not None else 0
        x = self.embed(tgt_in, self.tgt_embed, self.tgt_positions, start)
        for i, layer in enumerate(self.decoder_layers):
            if state is None:
                x = layer(x, memory, src_mask)
            else:
                x = layer(
                    x,
                    None,
                    state.src_mask,
                    cache=state.caches[i],
                    memory_kv=state.memory_kv[i],
                )
        if state is not None:
            state.length += tgt_in.size(1)
        if only_at is not None:
            x = x[only_at]
        return self.generator(self.decoder_norm(x))

    def start_decoding(
        self, src: torch.Tensor, cache_size: int, beams: int = 1
    ) -> tuple[torch.Tensor, DecoderState]:
        """Encode once and precompute every layer's encoder keys/values; caches hold `cache_size`
        decoder tokens. With `beams` > 1 each source is encoded once and its rows repeated, so
        rows b*beams .. b*beams + beams - 1 (one sentence's beams) share identical memory."""
        self._check_tokens("src", src)
        src_mask = self.source_mask(src)
        memory = self._encoder(src, src_mask)
        memory_kv = [layer.cross_attn.project_kv(memory) for layer in self.decoder_layers]
        if beams > 1:
            src_mask = src_mask.repeat_interleave(beams, dim=0)
            memory = memory.repeat_interleave(beams, dim=0)
            memory_kv = [
                (k.repeat_interleave(beams, dim=0), v.repeat_interleave(beams, dim=0))
                for k, v in memory_kv
            ]
        c = self.config
        # The caches keep keys and values in the dtype the projections give them: bf16 or fp16
        # under autocast (where the encoder's output is float32), so no step casts them, and
        # attention, which autocast runs in that dtype, reads them as they were computed.
        kv_dtype = memory_kv[0][0].dtype if memory_kv else memory.dtype
        caches = [
            KVCache(
                memory.size(0),
                c.n_heads,
                cache_size,
                c.head_dim_k,
                c.head_dim_v,
                device=memory.device,
                dtype=kv_dtype,
            )
            for _ in self.decoder_layers
        ]
        return memory, DecoderState(src_mask=src_mask, memory_kv=memory_kv, caches=caches)

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor, only_at: torch.Tensor | None = None
    ) -> torch.Tensor:
        self._check_pair(src, tgt_in)
        self._check_tokens("src", src, values=False)
        self._check_tokens("tgt_in", tgt_in, values=False)
        self._check_ids((("src", src), ("tgt_in", tgt_in)))  # one read-back for both
        self._check_only_at(only_at, tgt_in)
        src_mask = self.source_mask(src)
        memory = self._encoder(src, src_mask)
        return self._decoder(tgt_in, memory, src_mask, None, only_at)


def logits_at_real_targets(
    model: nn.Module,
    src: torch.Tensor,
    tgt_in: torch.Tensor,
    tgt_out: torch.Tensor,
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, V) logits and their (n,) targets for the non-padding positions of `tgt_out`.

    Calls `model(...)` itself, so a DistributedDataParallel or compiled wrapper works as well.
    """
    real = tgt_out != pad_id
    return model(src, tgt_in, only_at=real), tgt_out[real]


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each tied tensor counted once."""
    seen, total = set(), 0
    for p in model.parameters():  # parameters() already yields a shared tensor once
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


@dataclass(frozen=True)
class LayerWeights:
    """Parameters of one encoder layer and one decoder layer, in closed form.

    The weight matrices are grouped by the positions they multiply, because FLOP counts charge each
    matrix entry 2 FLOPs per position it is applied to, and the groups see different positions:
    """

    encoder_matrices: int  # self-attention Q, K, V, output and the FFN's two matrices; at source positions
    encoder_vectors: int  # biases and layer-norm gains and shifts
    decoder_target_matrices: int  # self-attention Q, K, V, output, cross-attention Q and output, FFN; at target positions
    # cross-attention K and V, applied to the encoder output (source positions)
    decoder_source_matrices: int
    decoder_vectors: int


def layer_weights(config: TransformerConfig) -> LayerWeights:
    """`LayerWeights` of `config`: the one closed form that parameter and FLOP counts share."""
    d, f, h = config.d_model, config.d_ff, config.n_heads
    dk, dv = config.head_dim_k, config.head_dim_v
    self_attn = (
        d * h * (2 * dk + dv) + h * dv * d
    )  # fused Q, K, V projection and the output projection
    ffn = 2 * d * f
    self_attn_bias = h * (2 * dk + dv) + d
    cross_attn_bias = h * dk + h * (dk + dv) + d
    ffn_bias = f + d
    norm = 2 * d
    return LayerWeights(
        encoder_matrices=self_attn + ffn,
        encoder_vectors=self_attn_bias + ffn_bias + 2 * norm,
        decoder_target_matrices=self_attn + d * h * dk + h * dv * d + ffn,
        decoder_source_matrices=d * h * (dk + dv),
        decoder_vectors=self_attn_bias + cross_attn_bias + ffn_bias + 3 * norm,
    )


def expected_parameter_count(config: TransformerConfig, vocab_size: int) -> int:
    """The closed-form count of this architecture with a shared vocabulary and tied embeddings."""
    w = layer_weights(config)
    encoder = config.encoder_layers * (w.encoder_matrices + w.encoder_vectors)
    decoder = config.decoder_layers * (
        w.decoder_target_matrices + w.decoder_source_matrices + w.decoder_vectors
    )
    embeddings = (
        vocab_size * config.d_model
    )  # one matrix: both embeddings and the output projection
    positions = (
        2 * config.max_len * config.d_model if config.positional == "learned" else 0
    )
    final_norms = (
        2 * 2 * config.d_model if config.norm_position == "pre" else 0
    )  # pre-norm's last LayerNorms
    return encoder + decoder + embeddings + positions + final_norms


@contextlib.contextmanager
def recording_attention(model: Transformer):
    """Within the block every attention module takes the explicit path and keeps its weights."""
    modules = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    for m in modules:
        m.record = []
    try:
        yield modules
    finally:
        for m in modules:
            m.record = None


@torch.no_grad()
def attention_maps(
    model: Transformer, src: torch.Tensor, tgt: torch.Tensor | None = None
) -> dict:
    """Every layer's and head's attention weights, for pictures.

    Returns {"encoder": [L x (B, h, S, S)], "decoder_self": [L x (B, h, T, T)],
    "decoder_cross": [L x (B, h, T, S)]}; the decoder entries are present only when `tgt` (the
    decoder input, starting with bos) is given. Runs in eval mode, so dropout is off. `src` and
    `tgt` have one row per sentence and at most `config.max_len` positions (ValueError otherwise).
    """
    if tgt is not None:
        model._check_pair(src, tgt)
    was_training = model.training
    model.eval()
    try:
        with recording_attention(model):
            src_mask = model.source_mask(src)
            memory = model.encode(src, src_mask)
            maps = {
                "encoder": [layer.self_attn.record[0] for layer in model.encoder_layers]
            }
            if tgt is not None:
                model.decode(tgt, memory, src_mask)
                maps["decoder_self"] = [
                    layer.self_attn.record[0] for layer in model.decoder_layers
                ]
                maps["decoder_cross"] = [
                    layer.cross_attn.record[0] for layer in model.decoder_layers
                ]
    finally:
        model.train(was_training)
    return maps
