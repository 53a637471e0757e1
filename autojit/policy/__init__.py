"""Signatures, caches, routing, configuration and statistics."""

from autojit.policy.config import Settings, config, current_settings, reload_environment
from autojit.policy.dispatcher import Dispatcher

__all__ = ["Dispatcher", "Settings", "config", "current_settings", "reload_environment"]
