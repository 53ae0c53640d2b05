"""Built-in options of the `residual` config group, one module each (`residual=bpnn` is
`bpnn.py`, with its PyTorch helpers in `bpnn_torch.py` and its training loop in
`bpnn_training.py`)."""
