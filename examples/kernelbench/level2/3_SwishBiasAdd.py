"""x * sigmoid(x) + bias, the bias broadcast over rows (an element-wise chain, memory-bound)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Swish (SiLU written out) followed by a per-column bias of shape (dim,)."""

    def __init__(self, dim):
        super(Model, self).__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        return x * torch.sigmoid(x) + self.bias


batch_size = 4096
dim = 8192


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [dim]
