"""A Lightning training script (strategy "ddp" on CPU): Lightning builds the DDP and steps the optimizer."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 10))

    def training_step(self, batch, index):
        inputs, target = batch
        return nn.functional.cross_entropy(self.net(inputs), target)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    generator = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(2048, 64, generator=generator), torch.randint(0, 10, (2048,), generator=generator))
    trainer = L.Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        max_epochs=5,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Classifier(), DataLoader(data, batch_size=32))
