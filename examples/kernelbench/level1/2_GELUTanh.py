"""GELU, tanh approximation, element-wise over a 2-D f32 tensor (memory-bound)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return F.gelu(x, approximate="tanh")


batch_size = 4096
dim = 8192


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
