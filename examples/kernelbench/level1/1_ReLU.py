"""ReLU over a 2-D f32 tensor (memory-bound: one read, one write)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies max(x, 0) element-wise."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 4096
dim = 8192


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
