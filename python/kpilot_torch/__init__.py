"""kpilot's PyTorch worker: runs KernelBench problems and flashinfer-bench definitions for kpilot
(docs/pytorch.md). Entry point: `python -m kpilot_torch.worker describe|run REQUEST.json`."""
