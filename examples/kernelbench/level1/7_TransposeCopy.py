"""Transpose of a 2-D f32 tensor into a new contiguous tensor (a pure data movement)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """x.t().contiguous() for x of shape (rows, cols): output (cols, rows)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return x.t().contiguous()


rows = 8192
cols = 4096


def get_inputs():
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return []
