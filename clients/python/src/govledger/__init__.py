"""govledger: the client of govledger's HTTP API and gate(), a
framework-neutral handoff gate. Standard library only.

    from govledger import Agent, Client, gate

The guide: docs/guides/python.md in the govledger repository.
"""

from .client import Client, GovledgerError, HandoffRejected, LedgerUnavailable, check_workflow_id
from .gate import MODES, Agent, Decision, gate, handoff_document, refusal_text

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Client",
    "Decision",
    "GovledgerError",
    "HandoffRejected",
    "LedgerUnavailable",
    "MODES",
    "check_workflow_id",
    "gate",
    "handoff_document",
    "refusal_text",
]
