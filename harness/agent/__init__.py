"""The agent loop: sessions of a model calling the registry's tools, and their approvals."""

from ..tools.approvals import DECISIONS, ApprovalError, Approvals
from .agent_service import AgentConfig, AgentService
from .log import SessionNotFound
from .session import Session
from .turn_events import TurnEvents

Agent = AgentService
ApprovalBroker = Approvals
"""The approval object the agent provides as ``approval`` (``harness.tools.approvals``)."""

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
