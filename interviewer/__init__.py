"""Interviewer: a local mock-interview coach that scores answers against rubrics."""

import os

# Set before torch, transformers or chromadb load. Nothing may be fetched from a model hub at run
# time (models ship in packages and load by path), and on a busy 2-core CPU OpenMP's spin-waiting
# threads make one short sentence take a second unless they wait passively.
for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "OMP_WAIT_POLICY": "PASSIVE",
    "TOKENIZERS_PARALLELISM": "false",
    "ANONYMIZED_TELEMETRY": "False",
    "GRADIO_ANALYTICS_ENABLED": "False",
}.items():
    os.environ.setdefault(_name, _value)

__version__ = "0.1.0"
