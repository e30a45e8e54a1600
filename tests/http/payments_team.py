"""Payments test helpers: a workspace team (an owner who pays, three approvers) and the
event timeline of a payment."""

import threading
import time
import uuid

from conftest import USER_PASSWORD
from helpers import assert_json, create_beneficiary

PAY = "/v1/payments"
BEN = "/v1/beneficiaries"
POLICY = PAY + "/approval-policy"


class Team:
    """A workspace with an owner (who creates payments) and three approvers."""

    def __init__(self, server):
        self.server = server
        self.owner_email = "owner-%s@example.com" % uuid.uuid4().hex[:10]
        self.wid = server.create_workspace("ws-" + self.owner_email[6:16], self.owner_email,
                                           password=USER_PASSWORD)
        self.owner = self.login(self.owner_email)
        self.approvers = [self.member("approver") for _ in range(3)]

    def login(self, email):
        tok = self.server.login(email, USER_PASSWORD, workspace_id=self.wid)["access_token"]
        return self.server.client(token=tok)

    def member(self, role):
        email = "%s-%s@example.com" % (role, uuid.uuid4().hex[:8])
        self.server.create_user(self.wid, email, role)
        return self.login(email)

    def reconnect(self):
        """A fresh owner client (after a restart closed the old one, or the clock moved past
        its token's expiry)."""
        self.owner = self.login(self.owner_email)
        return self.owner

    def beneficiary(self, currency="EUR", **over):
        fields = {"EUR": {}, "GBP": {"account_identification": {
            "scheme": "SortCodeAccountNumber", "identification": "20000055555555"},
            "bank": None, "country": "GB"}}[currency]
        ben = create_beneficiary(self.owner, currency=currency, external_id=None,
                                 **{**fields, **over})
        r = self.approvers[0].put(BEN + "/" + ben["id"] + "/approve")
        return assert_json(r, 200)

    def pay(self, ben, amount=1000, client=None, **over):
        body = {"amount": amount, "currency": ben["currency"], "type": "sepa",
                "originating_account": "acc-operating", "beneficiary_id": ben["id"], **over}
        return (client or self.owner).post(PAY, json=body)

    def policy(self, tiers):
        return assert_json(self.owner.put(POLICY, json={"tiers": tiers}), 200)


def events(client, pay_id):
    return [e["type"] for e in assert_json(client.get(PAY + "/%s/events?limit=100" % pay_id),
                                           200)["data"]]


def race(clients, method, url):
    """Sends the same request from every client at once; their responses."""
    results, go = [], threading.Barrier(len(clients))

    def send(c):
        go.wait()
        results.append(getattr(c, method)(url))

    threads = [threading.Thread(target=send, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return results


def wait_status(client, url, statuses, timeout=15.0):
    """Polls the resource at url until its status is one of statuses (bounded in time)."""
    deadline = time.monotonic() + timeout
    while True:
        res = assert_json(client.get(url), 200)
        if res["status"] in statuses:
            return res
        assert time.monotonic() < deadline, "%s still %s after %.0f s" % (
            url, res["status"], timeout)
        time.sleep(0.02)
