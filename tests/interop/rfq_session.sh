#!/usr/bin/env bash
# One rfq shell session, run by tests/interop/test_rfq_cli.py with CLI=rfq (the real rfq 1.4.0) and with
# CLI=ferroq on the same topics: their standard output (ids aside) and the Redis state they leave must match.
# Each command's exit status is printed after it ("-> N"), so exit statuses are compared too. Every verb
# appears with its short and its long flags; the long ones are rfq 0.1's (list-topics, list-queue, purge-queue,
# publish, consume and harvest with --topic, --queue, --message).
set -u
run() {
    "$CLI" "$@"
    echo "-> $?"
}
sorted() {
    "$CLI" "$@" | sort
    echo "-> ${PIPESTATUS[0]}"
}

sorted list-topics
run publish -t jobs -m '{"tile": "T32UNE", "n": 1}'
run publish --topic jobs --message '{"tile": "T32UNF", "cloud": 0.25, "big": 12345678901234567890}'
run publish -t jobs -m '{"tile": "urgent"}' -f
run publish -t other.topic -m '{"ключ": "значение ✓", "quote": "a \"b\" c"}' --front
sorted list-topics
run info
run list-queue -t jobs
run list-queue --topic jobs --queue nextlog
oldest=$("$CLI" list-queue -t jobs | tail -n 1)
run peek -t jobs -m "$oldest"
run peek --topic other.topic --msgid "$("$CLI" list-queue -t other.topic)"
run peek -t jobs -m 0123456789abcdef0123456789abcdef
run consume -t jobs
run consume --topic jobs
run harvest -t jobs
run harvest --topic jobs
run info
run purge-queue -t jobs -q nextlog
run purge-queue --topic other.topic
run publish -t jobs -m '{"a": "1"}'
run list-queue -t jobs -q backlog
run purge-queue -t jobs --queue backlog
run list-queue -t jobs
sorted list-topics
run info
run publish -t kept -m '{"left": "for the state check"}'
run publish -t kept -m '{"first": "x"}' --front
"$CLI" version | tail -n 1
# usage errors: exit status 2 (the messages on stderr differ)
run list-queue
run list-queue -t jobs -q elsewhere
run publish -t jobs
run consume
run peek -t jobs
run completions zsh
run no-such-verb
