"""attentive-reader: machine reading comprehension with the attentive readers of Hermann et al. 2015."""

__version__ = "0.1.0"
