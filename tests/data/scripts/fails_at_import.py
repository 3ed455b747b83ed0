"""Fails as it starts, on every rank, before any optimizer step: its configuration file is not there."""

import torch.distributed as dist


def load_config(path):
    raise FileNotFoundError(f"no configuration at {path}")


config = load_config("experiment.yaml")
dist.init_process_group("gloo")
