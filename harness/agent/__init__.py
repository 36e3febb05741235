"""The agent loop: sessions of a model calling the registry's tools, and their approvals."""

from ..tools.approval_requests import DECISIONS, ApprovalError, Approvals
from .log import SessionNotFound
from .service import AgentConfig, AgentService
from .session import Session
from .turn_events import TurnEvents

Agent = AgentService
ApprovalBroker = Approvals
"""The approval object the agent provides as ``approval`` (``harness.tools.approval_requests``)."""

__all__ = [
    "DECISIONS",
    "Agent",
    "AgentConfig",
    "AgentService",
    "ApprovalBroker",
    "ApprovalError",
    "Session",
    "SessionNotFound",
    "TurnEvents",
]
