"""From a finished ``Response`` to the plans the executors run: every call validated,
keyed and given its claim, store-free (no I/O; the tools are not called).

A response with a rejected call plans nothing to run unless ``run_on_rejection``; a
response nothing tells from another turn is refused. O(n) hashing for n calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core.outcome import Outcome
from .._core.response import Response, ToolCall
from .._errors import IdempotencyKeyError, SettingsError
from .._tools.toolbox import Tool, Toolbox, ValidCall
from ..stores._requests import identity_label
from . import approvals
from .decisions import ApprovalGate, CallPlan, ClaimCall
from .idempotency import arguments_hash, call_key, idempotency_key
from .settings import Settings, check_retention

__all__ = ["Job", "plan_calls", "timeout_of"]


@dataclass(slots=True, kw_only=True)
class Job:
    """One validated call ready for the core, with what the driver needs to run it."""

    position: int
    plan: CallPlan
    tool: Tool
    call: ToolCall
    check: ValidCall
    scope: str


_NO_IDENTITY = (
    "this response has no response id and no timestamp, and its call ids were "
    "synthesised by toolwire, so nothing tells this turn from another: two "
    "turns would share their idempotency keys (a new call replayed or refused "
    "as a conflict). Pass run(response, turn=...) with an identity of the "
    "request that produced it (e.g. a digest of the request body, or a turn "
    "counter of the conversation); pass the same value when the same response "
    "is run again."
)


def timeout_of(settings: Settings, tool: Tool) -> float:
    """The timeout a call of ``tool`` runs under: its own, else the executor's."""
    return tool.timeout if tool.timeout is not None else settings.timeout


def plan_calls(
    settings: Settings, toolbox: Toolbox, response: Response, turn: str | None, owner: str
) -> tuple[list[Outcome | None], list[Job]]:
    """Validate and key every call; outcomes decided now (``None`` where a job runs),
    and the jobs for the rest, claimed by ``owner``."""
    checks = toolbox.check_response(response)  # refuses what is not a Response
    _check_turn(response, turn)
    decided: list[Outcome | None] = []
    jobs: list[Job] = []
    seen: dict[tuple[str, str], int] = {}
    for position, check in enumerate(checks):
        if not isinstance(check, ValidCall):
            decided.append(_rejected(check.call.id, check.call.name, check.reason))
            continue
        occurrence = seen.get((check.tool.name, check.call.id), 0)
        seen[(check.tool.name, check.call.id)] = occurrence + 1
        try:
            plan = _plan(settings, response, turn, owner, check, occurrence)
        except IdempotencyKeyError as exc:
            decided.append(_rejected(check.call.id, check.call.name, str(exc)))
            continue
        decided.append(None)
        job = Job(
            position=position,
            plan=plan,
            tool=check.tool,
            call=check.call,
            check=check,
            scope=settings.scope,
        )
        jobs.append(job)
    if len(jobs) < len(decided) and not settings.run_on_rejection:
        for job in jobs:
            decided[job.position] = Outcome(
                call_id=job.call.id,
                name=job.call.name,
                status="skipped",
                error="not run: another call of the same response was rejected",
            )
        return decided, []
    return decided, jobs


def _check_turn(response: Response, turn: str | None) -> None:
    if turn is not None and (not isinstance(turn, str) or not turn):
        raise SettingsError(f"turn must be a non-empty str or None, not {turn!r}")
    if (
        turn is None
        and response.response_id is None
        and response.created is None
        and any(call.synthetic_id for call in response.tool_calls)
    ):
        raise SettingsError(_NO_IDENTITY)


def _plan(
    settings: Settings,
    response: Response,
    turn: str | None,
    owner: str,
    check: ValidCall,
    occurrence: int,
) -> CallPlan:
    """The plan of one valid call (``IdempotencyKeyError`` if it cannot be keyed)."""
    call, tool = check.call, check.tool
    digest = arguments_hash(check.arguments)
    key = call_key(
        settings.scope,
        response.response_id,
        tool.name,
        call.id,
        occurrence,
        created=response.created,
        turn=turn,
    )
    timeout = timeout_of(settings, tool)
    if timeout > settings.timeout:  # the default was checked at construction
        check_retention(settings, tool.name, timeout)  # a tool registered since
    idem = idempotency_key(key, digest)
    claim = ClaimCall(
        key,
        digest,
        idem,
        owner,
        settings.lease,
        settings.retention,
        bool(tool.idempotent),  # a tool safe to repeat may take over a lapsed claim
        identity_label(settings.scope),
        None if turn is None else identity_label(turn),
        identity_label(tool.name),
        identity_label(call.id),
    )
    gate = None
    if tool.needs_approval(check):
        park = ClaimCall(
            approvals.record_key(idem),
            digest,
            idem,
            owner,
            settings.lease,
            settings.retention,
            False,
            *claim.identity(),
        )
        details = approvals.details_text(tool.name, call.id, check.arguments, tool.parameters)
        gate = ApprovalGate(park=park, details=details)
    return CallPlan(
        call_id=call.id,
        name=tool.name,
        claim=claim,
        heartbeat_interval=settings.heartbeat_interval,
        timeout=timeout,
        retry_on=settings.retry_on,
        approval=gate,
    )


def _rejected(call_id: str, name: str, reason: str) -> Outcome:
    return Outcome(call_id=call_id, name=name, status="rejected", error=reason)
