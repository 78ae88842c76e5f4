"""Replay of K streams: on the host, mirrored on the device, and the jitted loop's on the device."""
