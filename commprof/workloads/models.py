"""Built-in models (pure torch.nn) with synthetic batches: mlp, transformer, convnet, mlstm."""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from commprof.workloads.workload import Workload

# size -> constructor arguments; parameter counts are shown by `commprof run` and in run.json
MLP_SIZES = {"small": (1024, 8), "medium": (2048, 8), "large": (4096, 12)}
TRANSFORMER_SIZES = {"small": (256, 4, 4), "medium": (512, 8, 8), "large": (1024, 16, 16)}
CONVNET_SIZES = {"small": (32, 1), "medium": (64, 2), "large": (128, 3)}
MLSTM_SIZES = {"small": 512, "medium": 1024, "large": 4096}
VOCAB = 4096
SEQ_LEN = 64
MLSTM_SEQ_LEN = 32
IMAGE = 32


class MLP(nn.Module):
    def __init__(self, width: int, depth: int, classes: int = 10):
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class DecoderBlock(nn.Module):
    """Pre-norm GPT block: causal self-attention then a 4x MLP."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, dim: int, layers: int, heads: int, vocab: int = VOCAB, seq_len: int = SEQ_LEN):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(seq_len, dim)
        self.blocks = nn.ModuleList(DecoderBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        length = idx.shape[1]
        positions = torch.arange(length, device=idx.device)
        x = self.tokens(idx) + self.positions(positions)
        mask = torch.triu(torch.ones(length, length, dtype=torch.bool, device=idx.device), diagonal=1)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet-style network for 32x32 images: four stages of basic blocks."""

    def __init__(self, width: int, blocks_per_stage: int, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        stages: list[nn.Module] = []
        cin = width
        for i in range(4):
            cout = width * 2**i
            for j in range(blocks_per_stage):
                stages.append(BasicBlock(cin, cout, 2 if (j == 0 and i > 0) else 1))
                cin = cout
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class MLSTM(nn.Module):
    """Multiplicative LSTM (Krause et al.) byte-level language model, as in sentiment-discovery."""

    def __init__(self, hidden: int, vocab: int = 256, embed: int = 64):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Embedding(vocab, embed)
        self.wx = nn.Linear(embed, 4 * hidden)
        self.wh = nn.Linear(hidden, 4 * hidden, bias=False)
        self.wmx = nn.Linear(embed, hidden, bias=False)
        self.wmh = nn.Linear(hidden, hidden, bias=False)
        self.head = nn.Linear(hidden, vocab)
        nn.init.uniform_(self.wh.weight, -1 / math.sqrt(hidden), 1 / math.sqrt(hidden))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)
        h = x.new_zeros(idx.shape[0], self.hidden)
        c = torch.zeros_like(h)
        outputs = []
        for t in range(idx.shape[1]):
            xt = x[:, t]
            m = self.wmx(xt) * self.wmh(h)
            i, f, o, u = (self.wx(xt) + self.wh(m)).chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(u)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return self.head(torch.stack(outputs, dim=1))


def _classify_loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.float(), target)


def _token_loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.float().flatten(0, 1), target.flatten())


def _vectors(dim: int) -> Callable:
    def make(batch: int, gen: torch.Generator):
        return torch.randn(batch, dim, generator=gen), torch.randint(0, 10, (batch,), generator=gen)

    return make


def _images(batch: int, gen: torch.Generator):
    return torch.randn(batch, 3, IMAGE, IMAGE, generator=gen), torch.randint(0, 10, (batch,), generator=gen)


def _tokens(vocab: int, length: int) -> Callable:
    def make(batch: int, gen: torch.Generator):
        seq = torch.randint(0, vocab, (batch, length + 1), generator=gen)
        return seq[:, :-1], seq[:, 1:]

    return make


def build_builtin(name: str, size: str) -> Workload:
    if name == "mlp":
        width, depth = MLP_SIZES[size]
        return Workload(f"mlp-{size}", MLP(width, depth), _vectors(width), _classify_loss)
    if name == "transformer":
        dim, layers, heads = TRANSFORMER_SIZES[size]
        return Workload(f"transformer-{size}", GPT(dim, layers, heads), _tokens(VOCAB, SEQ_LEN), _token_loss)
    if name == "convnet":
        width, blocks = CONVNET_SIZES[size]
        return Workload(f"convnet-{size}", ResNet(width, blocks), _images, _classify_loss)
    if name == "mlstm":
        hidden = MLSTM_SIZES[size]
        return Workload(f"mlstm-{size}", MLSTM(hidden), _tokens(256, MLSTM_SEQ_LEN), _token_loss)
    raise KeyError(name)
