"""One attention head: q, k, v projections, softmax(q k^T / sqrt(d_head)) v, f32, no mask."""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Single-head scaled dot-product attention over (batch_size, seq_len, d_model)."""

    def __init__(self, d_model, d_head):
        super(Model, self).__init__()
        self.q = nn.Linear(d_model, d_head, bias=False)
        self.k = nn.Linear(d_model, d_head, bias=False)
        self.v = nn.Linear(d_model, d_head, bias=False)
        self.scale = 1.0 / math.sqrt(d_head)

    def forward(self, x):
        q = self.q(x)
        k = self.k(x)
        v = self.v(x)
        scores = torch.matmul(q, k.transpose(1, 2)) * self.scale
        return torch.matmul(torch.softmax(scores, dim=-1), v)


batch_size = 8
seq_len = 1024
d_model = 256
d_head = 64


def get_inputs():
    x = torch.randn(batch_size, seq_len, d_model)
    return [x]


def get_init_inputs():
    return [d_model, d_head]
