"""Training: the loss, the learning-rate schedule, and (in their own modules) the trainer."""
from .loss import LabelSmoothedCrossEntropy, label_smoothed_cross_entropy
from .schedule import NoamSchedule, noam_lr

__all__ = ["LabelSmoothedCrossEntropy", "NoamSchedule", "label_smoothed_cross_entropy", "noam_lr"]
