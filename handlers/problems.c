/* The problem codes the APIs raise, with their titles: what a client reads in a problem
 * document's title. runtime/main.c hands them to the runtime at start (problem_register); the
 * runtime's own codes (malformed requests, authentication, idempotency, rate limits, ...) are
 * in runtime/problem.c. A code keeps its title for good: clients may show it. */
#include "handlers/problems.h"

const struct problem_code handlers_problems[] = {
    {"invalid_credentials", "Invalid email or password"},
    {"invalid_grant", "Invalid grant"},
    {"invalid_scope", "Invalid scope"},
    {"role_is_builtin", "Built-in role"},
    {"role_limit_reached", "Too many roles"},
    {"service_account_disabled", "Service account disabled"},
    {"already_member", "Already a member"},
    {"invalid_invitation", "Invalid invitation"},
    {"invitation_used", "Invitation already used"},
    {"invitation_expired", "Invitation expired"},
    {"account_exists", "Account already exists"},
    {"weak_password", "Password too weak"},
    {"mfa_required", "Multi-factor authentication required"},
    {"invalid_otp", "Invalid one-time code"},
    {"invalid_code", "Invalid code"},
    {"mfa_already_enabled", "Multi-factor authentication already on"},
    {"mfa_not_pending", "No enrolment to confirm"},
    {"mfa_not_enabled", "Multi-factor authentication is off"},
    {"not_a_user", "Not a user"},
    {"cannot_remove_self", "Cannot remove yourself"},
    {"last_admin", "Last administrator"},
    {"reauthentication_failed", "Re-authentication failed"},
    {"self_approval", "Self-approval not allowed"},
    {"already_approved", "Already decided"},
    {"maker_cannot_approve", "A maker cannot approve"},
    {"approver_must_be_a_person", "Approver must be a person"},
    {"acting_person_unknown", "No person acts"},
    {"service_account_cannot_delegate", "Service account cannot delegate"},
    {"beneficiary_changed", "Beneficiary changed since approval"},
    {"beneficiary_archived", "Beneficiary archived"},
    {"beneficiary_not_approved", "Beneficiary not approved"},
    {"beneficiary_mismatch", "Beneficiary does not fit the payment"},
    {"approval_limit_exceeded", "Approval limit exceeded"},
    {"invalid_transition", "Invalid state transition"},
    {"payment_not_editable", "Payment can no longer be changed"},
    {"not_creator", "Not the creator"},
    {"part_of_batch", "Part of a batch"},
    {"invalid_client", "Invalid client"},
    {"unsupported_grant_type", "Unsupported grant type"},
    {"access_denied", "Access denied"},
    {"unknown_client", "Unknown application"},
    {"invalid_redirect_uri", "Invalid redirect URI"},
    {"expired_request", "Sign-in expired"},
    {"duplicate_external_id", "Duplicate external_id"},
};

const size_t handlers_problems_count = sizeof handlers_problems / sizeof handlers_problems[0];
