"""Read TensorBoard event files back (what zoo.loops.tensorboard_writer wrote)."""

import glob
import os
import struct
from typing import Dict, List, Tuple


def read_scalars(logdir: str) -> Dict[str, List[Tuple[int, float]]]:
  """Return {tag: [(step, value), ...]} from the event files in `logdir`.

  Reads the TFRecord framing directly with tensorboardX's protobuf classes,
  applying purges as TensorBoard does (a SessionLog START at step s hides
  the earlier-written events at steps >= s); for tests and scripts.
  """
  # pylint: disable-next=g-import-not-at-top
  from tensorboardX.proto import event_pb2
  scalars: Dict[str, List[Tuple[int, float]]] = {}
  # In name (time) order, as TensorBoard reads them.
  for path in sorted(glob.glob(os.path.join(logdir, 'events.out.tfevents.*'))):
    for record in _records(path):
      event = event_pb2.Event.FromString(record)
      if (event.HasField('session_log') and
          event.session_log.status == event_pb2.SessionLog.START):
        for tag in scalars:
          scalars[tag] = [(s, v) for s, v in scalars[tag] if s < event.step]
      for value in event.summary.value:
        if value.HasField('simple_value'):
          scalars.setdefault(value.tag, []).append(
              (event.step, value.simple_value))
  return scalars


def _records(path: str):
  with open(path, 'rb') as f:
    while True:
      header = f.read(12)  # uint64 length, uint32 masked CRC of it.
      if len(header) < 12:
        return
      (length,) = struct.unpack('<Q', header[:8])
      data = f.read(length)
      if len(data) < length or len(f.read(4)) < 4:  # Truncated by a kill.
        return
      yield data

