-- hookwire shared approval queue, schema version 1.
--
-- approval_requests: one row per request any host submitted on any
-- instance; `state` moves pending -> decided | closed exactly once.
-- approval_decisions: the audit log, one row per decision attempt.
-- approval_instances: each instance's lease (its heartbeat).

CREATE SEQUENCE approval_boots;

CREATE TABLE approval_instances (
    id         text PRIMARY KEY,
    started_at timestamptz NOT NULL DEFAULT now(),
    heartbeat  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE approval_requests (
    id                 text PRIMARY KEY,
    seq                bigserial NOT NULL,
    host               text NOT NULL,
    host_request_id    text NOT NULL,
    -- The instance holding the host's link; NULL while the host is away.
    host_instance      text,
    detached_at        timestamptz,
    context_identity   text,
    interception_point text NOT NULL,
    session_id         text NOT NULL,
    tool_name          text,
    reason             text,
    -- The request as hookwire.v1.ApprovalRequest (protobuf).
    request            bytea NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    deadline           timestamptz NOT NULL,
    seen_names         text[] NOT NULL DEFAULT '{}',
    seen_methods       text[] NOT NULL DEFAULT '{}',
    state              text NOT NULL DEFAULT 'pending'
                       CHECK (state IN ('pending', 'decided', 'closed')),
    -- Decided: the winning decision as hookwire.v1.ApprovalResolution.
    decided_at         timestamptz,
    approver           text,
    approver_method    text,
    decided_on         text,
    resolution         bytea,
    -- Closed: why, and what the host is told when it failed.
    closed_at          timestamptz,
    close_reason       text CHECK (close_reason IN ('expired', 'cancelled', 'host_gone', 'failed')),
    close_note         text,
    CHECK ((state = 'decided') = (resolution IS NOT NULL)),
    CHECK ((state = 'closed') = (close_reason IS NOT NULL))
);

CREATE INDEX approval_requests_pending ON approval_requests (seq) WHERE state = 'pending';
CREATE INDEX approval_requests_by_host ON approval_requests (host, host_request_id);
CREATE INDEX approval_requests_by_instance ON approval_requests (host_instance) WHERE state = 'pending';

CREATE TABLE approval_decisions (
    seq                bigserial PRIMARY KEY,
    request_id         text NOT NULL,
    decided_at         timestamptz NOT NULL,
    approver           text NOT NULL,
    approver_method    text NOT NULL,
    instance           text NOT NULL,
    outcome            text NOT NULL,
    edited_path        text,
    edited_value       text,
    acceptance         text NOT NULL,
    host               text,
    host_request_id    text,
    context_identity   text,
    interception_point text,
    session_id         text,
    tool_name          text,
    reason             text
);

CREATE INDEX approval_decisions_by_time ON approval_decisions (decided_at DESC, seq DESC);
CREATE INDEX approval_decisions_by_approver ON approval_decisions (approver, decided_at DESC);
CREATE INDEX approval_decisions_by_request ON approval_decisions (request_id);
