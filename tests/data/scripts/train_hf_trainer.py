"""A Hugging Face Trainer script on CPU (use_cpu, Gloo): Trainer (through accelerate) builds the DDP."""

import torch
from torch import nn
from transformers import Trainer, TrainingArguments


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x, labels=None):
        logits = self.net(x)
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


class Examples(torch.utils.data.Dataset):
    def __init__(self):
        generator = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(2048, 64, generator=generator), torch.randint(0, 10, (2048,), generator=generator)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, index):
        return {"x": self.x[index], "labels": self.y[index]}


if __name__ == "__main__":
    arguments = TrainingArguments(
        output_dir="hf-output",
        per_device_train_batch_size=16,
        num_train_epochs=3,
        use_cpu=True,
        ddp_backend="gloo",
        ddp_bucket_cap_mb=1,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        dataloader_num_workers=0,
    )
    Trainer(model=Classifier(), args=arguments, train_dataset=Examples()).train()
