#!/usr/bin/python3
"""Builds small transformers in PyTorch and exports them with torch.onnx.export.

Run with Debian's Python (it has python3-torch and python3-onnx):

    /usr/bin/python3 models/export_models.py            # writes models/fixtures/

Each fixture NAME.onnx comes with NAME.inputs.npz-like files: NAME.in.<input>.npy and
NAME.ref.<output>.npy (PyTorch's outputs for those inputs) and an entry in
fixtures/manifest.json. Weights are seeded, so a rerun reproduces the files.
"""
import contextlib
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
VOCAB, D, HEADS, LAYERS, SEQ, BATCH = 64, 32, 4, 2, 16, 2


class NewGELU(nn.Module):
    """GPT-2's tanh GELU, written out as in its reference code."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class LayerNorm(nn.Module):
    """LayerNorm written out, as many model zoos do (exports decomposed at any opset)."""

    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d))
        self.bias = nn.Parameter(0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = (x - mean).pow(2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class GPTBlock(nn.Module):
    def __init__(self, fused_qkv, gelu):
        super().__init__()
        self.fused = fused_qkv
        self.ln_1 = nn.LayerNorm(D)
        if fused_qkv:
            self.c_attn = nn.Linear(D, 3 * D)
        else:
            self.q, self.k, self.v = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
        self.c_proj = nn.Linear(D, D)
        self.ln_2 = LayerNorm(D) if not fused_qkv else nn.LayerNorm(D)
        self.fc = nn.Linear(D, 4 * D)
        self.act = gelu
        self.proj = nn.Linear(4 * D, D)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.ln_1(x)
        if self.fused:
            q, k, v = self.c_attn(h).split(D, dim=2)
        else:
            q, k, v = self.q(h), self.k(h), self.v(h)
        q = q.view(b, t, HEADS, D // HEADS).transpose(1, 2)
        k = k.view(b, t, HEADS, D // HEADS).transpose(1, 2)
        v = v.view(b, t, HEADS, D // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // HEADS))
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, D)
        x = x + self.c_proj(y)
        return x + self.proj(self.act(self.fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, fused_qkv, tied):
        super().__init__()
        gelu = NewGELU() if fused_qkv else nn.GELU()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(SEQ, D)
        self.h = nn.ModuleList([GPTBlock(fused_qkv, gelu) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        if tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


class HeadLayoutBlock(nn.Module):
    """A GPT-2 block whose attention lays out q, k and v as another library does,
    written from the math of each:
      qkv3hd  one projection viewed [B, T, 3, H, hd], permuted to [3, B, H, T, hd]
              and unbound (timm's ViT, Megatron's older layout)
      hqkv    one projection viewed [B, T, H, 3 hd], each head's q, k, v
              sliced from its own 3 hd block (GPT-NeoX)
      gqa     one projection [q: H hd | k: G hd | v: G hd] split with sizes;
              each kv head serves H / G query heads (expanded, as LLaMA's
              repeat_kv does)
      mqa     separate projections, one kv head broadcast over the query heads
              in the attention matmuls (multi-query attention, Falcon's and
              SantaCoder's)"""

    def __init__(self, layout, heads, kv_heads):
        super().__init__()
        self.layout, self.heads, self.kv = layout, heads, kv_heads
        dh = D // heads
        self.ln_1, self.ln_2 = nn.LayerNorm(D), nn.LayerNorm(D)
        if layout == "mqa":
            self.q, self.k, self.v = nn.Linear(D, D), nn.Linear(D, kv_heads * dh), nn.Linear(D, kv_heads * dh)
        else:
            self.c_attn = nn.Linear(D, D + 2 * kv_heads * dh)
        self.c_proj = nn.Linear(D, D)
        self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def attention_inputs(self, h):
        b, t, _ = h.shape
        H, G, dh = self.heads, self.kv, D // self.heads
        if self.layout == "qkv3hd":
            q, k, v = self.c_attn(h).reshape(b, t, 3, H, dh).permute(2, 0, 3, 1, 4).unbind(0)
            return q, k, v
        if self.layout == "hqkv":
            qkv = self.c_attn(h).view(b, t, H, 3 * dh)
            q, k, v = qkv[..., :dh], qkv[..., dh:2 * dh], qkv[..., 2 * dh:]
            return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if self.layout == "gqa":
            q, k, v = self.c_attn(h).split([H * dh, G * dh, G * dh], dim=-1)
        else:
            q, k, v = self.q(h), self.k(h), self.v(h)
        q = q.view(b, t, H, dh).transpose(1, 2)
        k, v = (z.view(b, t, G, dh).transpose(1, 2) for z in (k, v))
        if self.layout == "gqa":  # [B, G, T, hd] -> [B, H, T, hd]: kv head g serves query heads g*H/G ..
            k, v = (z[:, :, None].expand(b, G, H // G, t, dh).reshape(b, H, t, dh) for z in (k, v))
        return q, k, v

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.attention_inputs(self.ln_1(x))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // self.heads))
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, D)
        x = x + self.c_proj(y)
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


# kind -> (layout, query heads, kv heads)
HEAD_LAYOUTS = {"gpt_qkv3hd": ("qkv3hd", 4, 4), "gpt_neox": ("hqkv", 4, 4), "gpt_gqa": ("gqa", 8, 2),
                "gpt_mqa": ("mqa", 4, 1)}


class HeadLayoutGPT(GPT):
    def __init__(self, kind):
        super().__init__(False, False)
        self.h = nn.ModuleList([HeadLayoutBlock(*HEAD_LAYOUTS[kind]) for _ in range(LAYERS)])


class BoolMaskBlock(GPTBlock):
    """GPT-2's block as nanoGPT and Hugging Face's GPT-2 write it: the causal
    mask is a bool buffer (tril of ones, [1, 1, SEQ, SEQ]) sliced to the
    sequence and negated in the graph, a bool value computed at run time."""

    def __init__(self):
        super().__init__(True, nn.GELU(approximate="tanh"))
        self.register_buffer("bias", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)).view(1, 1, SEQ, SEQ))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = (z.view(b, t, HEADS, D // HEADS).transpose(1, 2) for z in self.c_attn(self.ln_1(x)).split(D, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // HEADS))
        att = att.masked_fill(~self.bias[:, :, :t, :t], float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, D)
        x = x + self.c_proj(y)
        return x + self.proj(self.act(self.fc(self.ln_2(x))))


class BoolMaskGPT(GPT):
    def __init__(self):
        super().__init__(True, False)
        self.h = nn.ModuleList([BoolMaskBlock() for _ in range(LAYERS)])


class BertLike(nn.Module):
    """BERT-style encoder: token/position/type embeddings, padding mask, erf GELU."""

    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(SEQ, D)
        self.tok_type = nn.Embedding(2, D)
        self.ln = nn.LayerNorm(D, eps=1e-12)
        self.layers = nn.ModuleList()
        for _ in range(LAYERS):
            self.layers.append(nn.ModuleDict(dict(
                q=nn.Linear(D, D), k=nn.Linear(D, D), v=nn.Linear(D, D), o=nn.Linear(D, D),
                ln1=nn.LayerNorm(D, eps=1e-12), fc=nn.Linear(D, 4 * D), out=nn.Linear(4 * D, D),
                ln2=nn.LayerNorm(D, eps=1e-12))))

    def forward(self, ids, attention_mask):
        b, t = ids.shape
        pos = torch.arange(t, device=ids.device).unsqueeze(0).expand(b, t)
        x = self.ln(self.word(ids) + self.pos(pos) + self.tok_type(torch.zeros_like(ids)))
        ext = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        dh = D // HEADS
        for L in self.layers:
            def heads(z):
                return z.view(b, t, HEADS, dh).permute(0, 2, 1, 3)
            q, k, v = heads(L["q"](x)), heads(L["k"](x)), heads(L["v"](x))
            s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh) + ext
            p = F.softmax(s, dim=-1)
            c = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(b, t, D)
            x = L["ln1"](x + L["o"](c))
            x = L["ln2"](x + L["out"](F.gelu(L["fc"](x))))
        return x


class BertPooler(BertLike):
    """BertLike returning Hugging Face's pooler_output (Linear + tanh on the first
    token): a projection outside any attention or MLP block."""

    def __init__(self):
        super().__init__()
        self.pooler = nn.Linear(D, D)

    def forward(self, ids, attention_mask):
        x = super().forward(ids, attention_mask)
        return torch.tanh(self.pooler(x[:, 0]))


class BertMLM(BertPooler):
    """Hugging Face's BertForPreTraining without NSP: the pooler output, and the
    masked-LM head (dense + GELU + LayerNorm, then a decoder tied to the word
    embeddings, with its own bias) as output 0, the logits a loss reads. The
    attention mask defaults to ones (the training loop feeds ones)."""

    def __init__(self):
        super().__init__()
        self.mlm_dense = nn.Linear(D, D)
        self.mlm_ln = nn.LayerNorm(D, eps=1e-12)
        self.decoder = nn.Linear(D, VOCAB)
        self.decoder.weight = self.word.weight

    def forward(self, ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(ids)
        x = BertLike.forward(self, ids, attention_mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.decoder(self.mlm_ln(F.gelu(self.mlm_dense(x)))), pooled


class TorchEncoder(nn.Module):
    """nn.TransformerEncoder over embedded tokens."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        # A callable activation keeps torch 1.13 off its fused fast path
        # (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
        layer = nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=4 * D, dropout=0.1,
                                           activation=lambda x: F.gelu(x), batch_first=True)
        self.enc = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)

    def forward(self, ids):
        return self.enc(self.emb(ids))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half_rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


KV_HEADS = 2


class LlamaBlock(nn.Module):
    """LLaMA-style block: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU."""

    def __init__(self, heads=None, kv_heads=None):
        super().__init__()
        self.heads, self.kv = heads or HEADS, kv_heads or KV_HEADS
        dh = D // self.heads
        self.n1, self.n2 = RMSNorm(D), RMSNorm(D)
        self.q = nn.Linear(D, self.heads * dh, bias=False)
        self.k = nn.Linear(D, self.kv * dh, bias=False)
        self.v = nn.Linear(D, self.kv * dh, bias=False)
        self.o = nn.Linear(self.heads * dh, D, bias=False)
        self.gate = nn.Linear(D, 2 * D, bias=False)
        self.up = nn.Linear(D, 2 * D, bias=False)
        self.down = nn.Linear(2 * D, D, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        H, G = self.heads, self.kv
        dh, rep = D // H, H // G
        h = self.n1(x)
        q = rotate_half_rope(self.q(h).view(b, t, H, dh).transpose(1, 2), cos, sin)
        k = rotate_half_rope(self.k(h).view(b, t, G, dh).transpose(1, 2), cos, sin)
        v = self.v(h).view(b, t, G, dh).transpose(1, 2)
        k = k[:, :, None].expand(b, G, rep, t, dh).reshape(b, H, t, dh)
        v = v[:, :, None].expand(b, G, rep, t, dh).reshape(b, H, t, dh)
        a = F.softmax((q @ k.transpose(-1, -2)) / math.sqrt(dh) + mask, dim=-1)
        x = x + self.o((a @ v).transpose(1, 2).reshape(b, t, D))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([LlamaBlock() for _ in range(LAYERS)])
        self.norm = RMSNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        t, dh = ids.shape[1], D // HEADS
        inv = 1.0 / (10000 ** (torch.arange(0, dh, 2).float() / dh))
        freqs = torch.outer(torch.arange(t).float(), inv)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((t, t), float("-inf")).triu(1)
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.head(self.norm(x))


MAX_POS = 32


class HFLlama(nn.Module):
    """LLaMA as Hugging Face writes it (the LlamaBlock above, GQA): rotary cos/sin
    caches and the additive causal mask are registered buffers (torch.onnx folds
    `cos_cached[:t]` into float initializers named like `onnx::Gather_N`), the
    inputs are `input_ids`, `attention_mask` and `position_ids`, and the cos/sin
    rows are looked up by position (a Gather of the table, then a Mul with q/k)."""

    def __init__(self, heads=None, kv_heads=None):
        super().__init__()
        dh = D // (heads or HEADS)
        self.embed_tokens = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([LlamaBlock(heads, kv_heads) for _ in range(LAYERS)])
        self.norm = RMSNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, dh, 2).float() / dh))
        freqs = torch.outer(torch.arange(MAX_POS).float(), inv)
        emb = torch.cat((freqs, freqs), -1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)
        min_value = torch.finfo(torch.float32).min
        self.register_buffer("causal_mask", torch.full((MAX_POS, MAX_POS), min_value).triu(1), persistent=False)

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        b, t = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones(b, t, dtype=torch.int64)
        if position_ids is None:
            position_ids = torch.arange(t).unsqueeze(0).expand(b, t)
        cos = self.cos_cached[:t][position_ids].unsqueeze(1)  # [b, 1, t, dh]
        sin = self.sin_cached[:t][position_ids].unsqueeze(1)
        padding = (1.0 - attention_mask[:, None, None, :].float()) * -1e9
        mask = self.causal_mask[:t, :t][None, None] + padding  # [b, 1, t, t]
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


class ViT(nn.Module):
    """Vision transformer: Conv patch embedding, class token, pre-norm encoder, classifier head."""

    def __init__(self, img=16, patch=4, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, D, patch, patch)
        n = (img // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, D))
        self.pos = nn.Parameter(torch.randn(1, n + 1, D))
        layer = nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.0, activation=lambda x: F.gelu(x),
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, classes)

    def forward(self, pixels):
        x = self.patch(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.enc(x))[:, 0])


class Seq2Seq(nn.Module):
    """Encoder-decoder (nn.Transformer): self-attention, causal decoder, cross-attention."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.t = nn.Transformer(D, HEADS, LAYERS, LAYERS, 2 * D, dropout=0.0, batch_first=True)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, src, tgt):
        t = tgt.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), 1)
        return self.head(self.t(self.emb(src), self.emb(tgt), tgt_mask=mask))


def make(kind):
    torch.manual_seed({"gpt_fused_tied": 1, "gpt_separate_untied": 2, "bert": 3, "encoder": 4, "llama": 5,
                       "vit": 6, "seq2seq": 7, "hf_llama": 8, "bert_pooler": 9, "bert_mlm": 10, "gpt_qkv3hd": 11,
                       "gpt_neox": 12, "gpt_gqa": 13, "gpt_mqa": 14, "gpt_bool_mask": 15, "hf_llama_gqa": 16}[kind])
    model = {"gpt_fused_tied": lambda: GPT(True, True), "gpt_separate_untied": lambda: GPT(False, False),
             "bert": BertLike, "encoder": TorchEncoder, "llama": Llama, "vit": ViT, "seq2seq": Seq2Seq,
             "hf_llama": HFLlama, "bert_pooler": BertPooler, "bert_mlm": BertMLM, "gpt_bool_mask": BoolMaskGPT,
             "hf_llama_gqa": lambda: HFLlama(heads=8, kv_heads=2),  # 8 query heads sharing 2 kv heads
             **{k: (lambda k=k: HeadLayoutGPT(k)) for k in HEAD_LAYOUTS}}[kind]()
    # Non-trivial LayerNorm affine parameters, so a lost scale/bias shows up.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))
    return model.eval()


def inputs_for(kind, batch, gen):
    if kind == "vit":
        return {"pixels": torch.randn(batch, 3, 16, 16, generator=gen)}
    if kind == "seq2seq":
        return {"src": torch.randint(0, VOCAB, (batch, SEQ), generator=gen),
                "tgt": torch.randint(0, VOCAB, (batch, SEQ // 2), generator=gen)}
    ids = torch.randint(0, VOCAB, (batch, SEQ), generator=gen)
    if kind in ("bert", "bert_pooler", "bert_mlm"):
        mask = torch.ones(batch, SEQ, dtype=torch.int64)
        mask[0, SEQ - 5:] = 0  # padding on the first sequence
        return {"ids": ids, "attention_mask": mask}
    if kind in ("hf_llama", "hf_llama_gqa"):
        return {"input_ids": ids, "attention_mask": torch.ones(batch, SEQ, dtype=torch.int64),
                "position_ids": torch.arange(SEQ).unsqueeze(0).expand(batch, SEQ).contiguous()}
    return {"ids": ids}


def folded_constants_as_initializers(path):
    """Rewrites the float Constant nodes of more than 8 elements as
    initializers named `onnx::<first consumer op>_<n>`: what torch 2's
    exporter writes for constant-folded buffers (rotary tables, masks), where
    Debian's torch 1.13 writes Constant nodes."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    consumers = {}
    for node in m.graph.node:
        for i in node.input:
            consumers.setdefault(i, node.op_type)
    keep, renames, k = [], {}, 0
    for node in m.graph.node:
        value = numpy_helper.to_array(node.attribute[0].t) if node.op_type == "Constant" and node.attribute and \
            node.attribute[0].name == "value" else None
        if value is None or value.dtype != np.float32 or value.size <= 8:
            keep.append(node)
            continue
        k += 1
        name = f"onnx::{consumers.get(node.output[0], 'Constant')}_{900 + k}"
        m.graph.initializer.append(numpy_helper.from_array(value, name))
        renames[node.output[0]] = name
    del m.graph.node[:]
    for node in keep:
        for j, i in enumerate(node.input):
            node.input[j] = renames.get(i, i)
        m.graph.node.append(node)
    onnx.save(m, path)


def export_static(kind, path, opset=17):
    """Exports `kind` at the fixtures' static batch and sequence to `path`
    (tests that build their fixture at test time), folded buffers as
    initializers; returns the inputs."""
    model = make(kind)
    ins = inputs_for(kind, BATCH, torch.Generator().manual_seed(7))
    with torch.no_grad():
        torch.onnx.export(model, tuple(ins.values()), path, input_names=list(ins),
                          output_names=["out", "pooled"] if kind == "bert_mlm" else ["out"],
                          # The bool mask's slice and Not stay in the graph unfolded, as a dynamic export keeps them.
                          opset_version=opset, do_constant_folding=kind != "gpt_bool_mask")
    folded_constants_as_initializers(path)
    return {n: v.numpy() for n, v in ins.items()}


def export_fixture(kind, out_dir):
    """Writes `kind`.onnx (export_static) with its batch-2 inputs and PyTorch's
    output as the fixtures are laid out (KIND.b2.in.NAME.npy, KIND.b2.ref.out.npy)."""
    path = os.path.join(out_dir, kind + ".onnx")
    ins = export_static(kind, path)
    for n, v in ins.items():
        np.save(os.path.join(out_dir, f"{kind}.b2.in.{n}.npy"), v)
    with torch.no_grad():
        out = make(kind)(*[torch.from_numpy(v) for v in ins.values()]).numpy()
    np.save(os.path.join(out_dir, f"{kind}.b2.ref.out.npy"), out)


def export(kind, opset, dynamic, manifest):
    name = f"{kind}_op{opset}_{'dynamic' if dynamic else 'static'}"
    model = make(kind)
    gen = torch.Generator().manual_seed(7)
    ins = inputs_for(kind, BATCH, gen)
    names = list(ins)
    path = os.path.join(OUT, name + ".onnx")
    dyn = {n: {0: "batch"} for n in names} if dynamic else None
    if dynamic:
        dyn["out"] = {0: "batch"}
    with torch.no_grad():
        # nn.MultiheadAttention takes its fused fast path (no ONNX export) when
        # gradients are off: export the ViT with them on.
        with torch.enable_grad() if kind in ("vit", "seq2seq") else contextlib.nullcontext():
            torch.onnx.export(model, tuple(ins.values()), path, input_names=names, output_names=["out"],
                              opset_version=opset, dynamic_axes=dyn, do_constant_folding=True)
        entry = {"name": name, "model": name + ".onnx", "runs": []}
        batches = [BATCH, 3] if dynamic else [BATCH]
        for b in batches:
            run_ins = ins if b == BATCH else inputs_for(kind, b, gen)
            out = model(*run_ins.values()).detach().numpy()
            tag = f"b{b}"
            for n, v in run_ins.items():
                np.save(os.path.join(OUT, f"{name}.{tag}.in.{n}.npy"), v.numpy())
            np.save(os.path.join(OUT, f"{name}.{tag}.ref.out.npy"), out)
            entry["runs"].append({"tag": tag,
                                  "inputs": {n: f"{name}.{tag}.in.{n}.npy" for n in names},
                                  "shapes": {n: list(v.shape) for n, v in run_ins.items()},
                                  "outputs": {"out": f"{name}.{tag}.ref.out.npy"}})
    manifest.append(entry)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--fixture":  # export_models.py --fixture KIND DIR
        export_fixture(sys.argv[2], sys.argv[3])
        return
    os.makedirs(OUT, exist_ok=True)
    manifest = []
    for kind in ["gpt_fused_tied", "gpt_separate_untied", "bert", "encoder", "llama", "vit", "seq2seq"]:
        for opset in [14, 17]:
            for dynamic in [False, True]:
                export(kind, opset, dynamic, manifest)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"wrote {len(manifest)} fixtures to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
