"""What an HTTP answer means to memsync: a 2xx passes, a refusal becomes a typed error.

The error is one of ``memsync.base.errors``', with the server's own reason (redacted) and
what to do.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from memsync.base.errors import (
    AuthError,
    InvalidResponse,
    NotFound,
    ProviderError,
    TransientProviderError,
)
from memsync.base.secrets import Secret, redact
from memsync.providers.http.retry import RateLimited, RetryPolicy, SharedBackoff, parse_retry_after

EXCERPT = 200  # characters of a server's error body worth showing


class AnswerChecks:
    """``HttpClient``'s reading of answers; the client sets what the messages name."""

    provider: str  # the configured provider's name
    base_url: httpx.URL  # the server
    secret: Secret | None  # redacted from whatever the server echoes
    credential: str | None  # where the credential comes from, safe to show
    auth: str  # "bearer" names a token, anything else a key
    auth_advice: str | None  # what to do about a refused credential, when known
    retry: RetryPolicy
    backoff: SharedBackoff  # a 429 holds every worker of this client

    def _check(self, where: str, response: httpx.Response) -> httpx.Response:
        status = response.status_code
        if 200 <= status < 300:
            return response
        detail = self._excerpt(response)
        if status in (401, 403):
            error = AuthError(self._auth_message(status, where, detail))
            error.status = status
            raise error
        if status == 404:
            missing = NotFound(f"{self.provider}: {where} found nothing (HTTP 404){detail}")
            missing.status = status
            raise missing
        if status == 429:
            wait = parse_retry_after(response.headers.get("Retry-After"))
            hold = wait if wait is not None else self.retry.initial_backoff
            self.backoff.hold(min(hold, self.retry.max_retry_after))
            raise RateLimited(
                f"{self.provider}: {where} was rate limited (HTTP 429){detail}", retry_after=wait
            )
        if status >= 500:
            wait = parse_retry_after(response.headers.get("Retry-After"))
            raise TransientProviderError(
                f"{self.provider}: {where} failed on the server (HTTP {status}){detail}",
                retry_after=wait,
            )
        if 300 <= status < 400:
            raise ProviderError(
                f"{self.provider}: {where} was redirected (HTTP {status}) to "
                f"{response.headers.get('Location', '?')}; set base_url to the final address"
            )
        refused = ProviderError(f"{self.provider}: {where} was refused (HTTP {status}){detail}")
        refused.status = status
        raise refused

    def _auth_message(self, status: int, where: str, detail: str = "") -> str:
        """Who refused what, with the server's own reason (redacted), and what to do.

        The advice follows the status: 401 is a credential the server does not accept (wrong,
        expired or revoked), 403 one it accepts that lacks the right to this call.
        """
        if self.credential is None:
            return (
                f"{self.provider}: {self.base_url} requires credentials (HTTP {status}{detail}); "
                f"set api_key_env or api_key_file in providers.{self.provider}"
            )
        what = "token" if self.auth == "bearer" else "key"
        if status == 403:
            return (
                f"{self.provider}: {self.base_url} accepted the {what} from {self.credential} but "
                f"refused it {where} (HTTP 403{detail}): the {what} lacks the right to this "
                f"call; use one that has it (an admin's)"
            )
        advice = self.auth_advice or (
            f"check that {self.credential} holds a {what} this server issued"
        )
        return (
            f"{self.provider}: {self.base_url} refused the {what} from {self.credential} "
            f"(HTTP 401{detail}): it is wrong, expired or revoked; {advice}"
        )

    def _excerpt(self, response: httpx.Response) -> str:
        try:
            text = response.text
        except (UnicodeDecodeError, httpx.ResponseNotRead):
            return ""
        try:
            body = json.loads(text)
            if isinstance(body, dict):
                text = _reason_in(body)
        except ValueError:
            pass
        text = redact(" ".join(text.split()), self.secret)[:EXCERPT]
        return f": {text}" if text else ""

    def _decode(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except (ValueError, UnicodeDecodeError):
            kind = response.headers.get("Content-Type", "no content type")
            raise InvalidResponse(
                f"{self.provider}: {response.request.method} {response.request.url.path} answered "
                f"HTTP {response.status_code} with a body that is not valid JSON "
                f"({len(response.content)} bytes, {kind}); is base_url the right server?"
            ) from None


def _reason_in(body: dict[str, Any]) -> str:
    """The server's reason from an error body: FastAPI's ``detail``, the Platform's ``error``
    (with ``details.message``), or a bare ``message``; the whole body when none is there."""
    found = body.get("detail") or body.get("error") or body.get("message")
    text = found if isinstance(found, str) else json.dumps(found or body, ensure_ascii=False)
    details = body.get("details")
    if isinstance(details, dict) and isinstance(details.get("message"), str):
        text = f"{text} ({details['message']})" if found else details["message"]
    return text


def short_reason(exc: Exception) -> str:
    """A transport error's first line, short enough for a message."""
    return str(exc).splitlines()[0][:EXCERPT] if str(exc) else type(exc).__name__
