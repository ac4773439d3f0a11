"""(A @ B) * scale + residual, f32; scale is a Python float passed with the inputs."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul(A, B) * scale + residual, A (M, K), B (K, N), residual (M, N)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B, residual, scale):
        return torch.matmul(A, B) * scale + residual


M = 1024
K = 768
N = 1536
scale = 0.5


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    residual = torch.randn(M, N)
    return [A, B, residual, scale]


def get_init_inputs():
    return []
