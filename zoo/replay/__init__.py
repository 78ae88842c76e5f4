"""Replay of K streams: on the host, mirrored on the device, bit-packed for the jitted loop."""
