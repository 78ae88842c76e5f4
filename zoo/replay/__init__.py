"""Replay of K streams: on the host, mirrored on the device, device-only."""
