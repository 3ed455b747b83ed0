"""TensorBoard event files written with the tensorboard package's own protocol buffers. torch's SummaryWriter
writes the same records, but importing it imports torch: most of a second, more than the whole analysis of a
54 MB trace after decoding."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


class EventWriter:
    """Scalars, text and one HParams session into one run folder (what TensorBoard shows as a run)."""

    def __init__(self, folder: Path):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        folder.mkdir(parents=True, exist_ok=True)
        self._file = EventFileWriter(str(folder))

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def flush(self) -> None:
        """What was added, on disk now (else within two minutes, and at the end): for a reader while it is written."""
        self._file.flush()

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        from tensorboard.compat.proto.summary_pb2 import Summary

        self._add(Summary(value=[Summary.Value(tag=tag, simple_value=float(value))]), step)

    def add_text(self, tag: str, text: str, step: int) -> None:
        """As the Text dashboard reads it (torch's add_text writes the same): a string tensor under
        `<tag>/text_summary`."""
        from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboard.compat.proto.tensor_pb2 import TensorProto
        from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
        from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

        metadata = SummaryMetadata(
            plugin_data=SummaryMetadata.PluginData(
                plugin_name="text", content=TextPluginData(version=0).SerializeToString()
            )
        )
        tensor = TensorProto(
            dtype="DT_STRING",
            string_val=[text.encode("utf-8")],
            tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
        )
        self._add(Summary(value=[Summary.Value(tag=f"{tag}/text_summary", metadata=metadata, tensor=tensor)]), step)

    def add_hparams(self, hparams: dict[str, Any], metrics: dict[str, float]) -> None:
        """One HParams session: the experiment (which hyperparameters and metrics), this run's values, its end,
        then each metric as a scalar at step 0."""
        from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboard.plugins.hparams import metadata
        from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
        from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

        start, infos = SessionStartInfo(), []
        for name, value in hparams.items():
            if isinstance(value, bool):
                start.hparams[name].bool_value, kind = value, "DATA_TYPE_BOOL"
            elif isinstance(value, (int, float)):
                start.hparams[name].number_value, kind = value, "DATA_TYPE_FLOAT64"
            else:
                start.hparams[name].string_value, kind = str(value), "DATA_TYPE_STRING"
            infos.append(HParamInfo(name=name, type=DataType.Value(kind)))
        experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=t)) for t in metrics])
        for tag, data in (
            (metadata.EXPERIMENT_TAG, HParamsPluginData(experiment=experiment)),
            (metadata.SESSION_START_INFO_TAG, HParamsPluginData(session_start_info=start)),
            (
                metadata.SESSION_END_INFO_TAG,
                HParamsPluginData(session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))),
            ),
        ):
            data.version = metadata.PLUGIN_DATA_VERSION
            plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString())
            self._add(Summary(value=[Summary.Value(tag=tag, metadata=SummaryMetadata(plugin_data=plugin))]), 0)
        for tag, value in metrics.items():
            self.add_scalar(tag, value, 0)

    def _add(self, summary: Any, step: int) -> None:
        from tensorboard.compat.proto.event_pb2 import Event

        self._file.add_event(Event(summary=summary, step=step, wall_time=time.time()))
