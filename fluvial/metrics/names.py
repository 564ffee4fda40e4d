"""The names of fluvial's system metrics: Flink's own (MetricNames), so that Flink's REST clients, Prometheus
queries and Grafana dashboards find them where they look.

Where each one is counted (all per buffer or per step, never per record):
- task: records in from the input channels, records out to the record writers, bytes that crossed a
  serialization boundary (channels between processes; in-process channels hand over objects and count none),
  time busy / back-pressured / idle, the input watermark of its head operator;
- operator: records into and out of the operator (its chained inputs and its Output), its input watermark
  (its event-time clock) and the last watermark it emitted;
- job (on the JobMaster): checkpoints, restarts, uptime.
"""

from __future__ import annotations

import enum


class MetricName(str, enum.Enum):
    # task and operator I/O
    NUM_RECORDS_IN = "numRecordsIn"
    NUM_RECORDS_OUT = "numRecordsOut"
    NUM_RECORDS_IN_RATE = "numRecordsInPerSecond"
    NUM_RECORDS_OUT_RATE = "numRecordsOutPerSecond"
    NUM_BYTES_IN = "numBytesIn"
    NUM_BYTES_OUT = "numBytesOut"
    NUM_BYTES_IN_RATE = "numBytesInPerSecond"
    NUM_BYTES_OUT_RATE = "numBytesOutPerSecond"
    CURRENT_INPUT_WATERMARK = "currentInputWatermark"
    CURRENT_OUTPUT_WATERMARK = "currentOutputWatermark"
    # task time
    BUSY_TIME = "busyTimeMsPerSecond"
    BACK_PRESSURED_TIME = "backPressuredTimeMsPerSecond"
    IDLE_TIME = "idleTimeMsPerSecond"
    ACC_BUSY_TIME = "accumulateBusyTimeMs"
    ACC_BACK_PRESSURED_TIME = "accumulateBackPressuredTimeMs"
    ACC_IDLE_TIME = "accumulateIdleTimeMs"
    # buffer debloating (a task with input channels, while debloating is on); fluvial's buffers count records
    DEBLOATED_BUFFER_SIZE = "debloatedBufferSize"
    ESTIMATED_TIME_TO_CONSUME_BUFFERS = "estimatedTimeToConsumeBuffersMs"
    # job
    LAST_CHECKPOINT_DURATION = "lastCheckpointDuration"
    LAST_CHECKPOINT_SIZE = "lastCheckpointSize"
    LAST_CHECKPOINT_RESTORE_TIMESTAMP = "lastCheckpointRestoreTimestamp"
    NUMBER_OF_COMPLETED_CHECKPOINTS = "numberOfCompletedCheckpoints"
    NUMBER_OF_FAILED_CHECKPOINTS = "numberOfFailedCheckpoints"
    NUMBER_OF_IN_PROGRESS_CHECKPOINTS = "numberOfInProgressCheckpoints"
    TOTAL_NUMBER_OF_CHECKPOINTS = "totalNumberOfCheckpoints"
    NUM_RESTARTS = "numRestarts"
    UPTIME = "uptime"


TASK_METRICS = (
    MetricName.NUM_RECORDS_IN,
    MetricName.NUM_RECORDS_OUT,
    MetricName.NUM_RECORDS_IN_RATE,
    MetricName.NUM_RECORDS_OUT_RATE,
    MetricName.NUM_BYTES_IN,
    MetricName.NUM_BYTES_OUT,
    MetricName.NUM_BYTES_IN_RATE,
    MetricName.NUM_BYTES_OUT_RATE,
    MetricName.CURRENT_INPUT_WATERMARK,
    MetricName.BUSY_TIME,
    MetricName.BACK_PRESSURED_TIME,
    MetricName.IDLE_TIME,
    MetricName.ACC_BUSY_TIME,
    MetricName.ACC_BACK_PRESSURED_TIME,
    MetricName.ACC_IDLE_TIME,
)

OPERATOR_METRICS = (
    MetricName.NUM_RECORDS_IN,
    MetricName.NUM_RECORDS_OUT,
    MetricName.NUM_RECORDS_IN_RATE,
    MetricName.NUM_RECORDS_OUT_RATE,
    MetricName.CURRENT_INPUT_WATERMARK,
    MetricName.CURRENT_OUTPUT_WATERMARK,
)

JOB_METRICS = (
    MetricName.LAST_CHECKPOINT_DURATION,
    MetricName.LAST_CHECKPOINT_SIZE,
    MetricName.LAST_CHECKPOINT_RESTORE_TIMESTAMP,
    MetricName.NUMBER_OF_COMPLETED_CHECKPOINTS,
    MetricName.NUMBER_OF_FAILED_CHECKPOINTS,
    MetricName.NUMBER_OF_IN_PROGRESS_CHECKPOINTS,
    MetricName.TOTAL_NUMBER_OF_CHECKPOINTS,
    MetricName.NUM_RESTARTS,
    MetricName.UPTIME,
)
