"""``cucim.clara.io``."""

from .. import Device, DeviceType

__all__ = ["Device", "DeviceType"]
