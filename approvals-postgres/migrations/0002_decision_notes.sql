-- The approver's note on each decision (the message of its verdict, at
-- most 1024 characters), shown in the approval page's history. Rows
-- written before this version have none.
ALTER TABLE approval_decisions ADD COLUMN note text;
