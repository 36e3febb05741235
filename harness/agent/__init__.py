"""The agent loop: sessions of a model calling the registry's tools, and their approvals."""

from .agent_service import AgentConfig, AgentService
from .approvals import DECISIONS, ApprovalBroker, ApprovalError
from .log import SessionNotFound
from .session import Session
from .turn_events import TurnEvents

Agent = AgentService

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
