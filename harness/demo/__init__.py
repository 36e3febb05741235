"""The demo model: scripted rules, not a language model, for a first chat without a key.

:mod:`.model` holds the rules and :class:`~harness.demo.model.DemoServer`, the scripted
OpenAI-compatible server of :mod:`harness.testing` answering by them; ``harness chat --demo``
and ``harness run --demo`` start it in their process (:mod:`harness.cli.demo`), and
``python -m harness.demo`` serves it alone, printing its URL.
"""
