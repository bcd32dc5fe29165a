"""The training engine the method plugins build on: configs and presets, optimizers and schedules, the plugin
interface, checkpoints (export and resumable state) and the shared training loop."""
