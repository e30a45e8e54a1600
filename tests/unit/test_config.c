/* Flags, environment equivalents and their precedence. */
#define _GNU_SOURCE /* sched_getaffinity, sched_setaffinity, CPU_SET */
#include "runtime/config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/unit/unit.h"

static enum config_result parse(struct config *c, int argc, char **argv)
{
    FILE *devnull = fopen("/dev/null", "w");
    enum config_result r = config_parse(c, argc, argv, devnull, devnull);
    fclose(devnull);
    return r;
}

static void test_defaults_match_the_documentation(void)
{
    struct config c;
    char *argv[] = { "ts", NULL };
    CHECK(parse(&c, 1, argv) == CONFIG_OK);
    CHECK_STR(c.data_dir, "./var");
    CHECK_STR(c.listen, "127.0.0.1");
    CHECK(c.https_port == 8443);
    CHECK(c.http_port == 8080);
    CHECK(c.threads >= 1);
    CHECK(c.settlement_interval_ms == 1000);
    CHECK(c.sandbox_rail_delay_ms == 5000);
    CHECK_STR(c.public_url, "https://127.0.0.1:8443");
}

/* Request threads default to the cores the process may run on (taskset, cpusets), not all the
 * machine's: a server pinned to one core runs one. */
static void test_threads_default_to_the_cores_of_the_affinity(void)
{
    cpu_set_t saved, one;
    CHECK(sched_getaffinity(0, sizeof saved, &saved) == 0);
    struct config c;
    char *argv[] = { "ts", NULL };
    CHECK(parse(&c, 1, argv) == CONFIG_OK);
    CHECK(c.threads == CPU_COUNT(&saved));
    int cpu = 0;
    while (!CPU_ISSET(cpu, &saved))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECK(parse(&c, 1, argv) == CONFIG_OK);
    CHECK(c.threads == 1);
    CHECK(sched_setaffinity(0, sizeof saved, &saved) == 0);
}

static void test_flag_beats_environment(void)
{
    struct config c;
    setenv("TREASURY_HTTPS_PORT", "9443", 1);
    char *argv1[] = { "ts", NULL };
    CHECK(parse(&c, 1, argv1) == CONFIG_OK);
    CHECK(c.https_port == 9443);
    char *argv2[] = { "ts", "--https-port=10443", NULL };
    CHECK(parse(&c, 2, argv2) == CONFIG_OK);
    CHECK(c.https_port == 10443);
    unsetenv("TREASURY_HTTPS_PORT");
}

static void test_bad_flags_are_usage_errors(void)
{
    struct config c;
    char *unknown[] = { "ts", "--nope", NULL };
    CHECK(parse(&c, 2, unknown) == CONFIG_USAGE);
    char *port[] = { "ts", "--https-port", "70000", NULL };
    CHECK(parse(&c, 3, port) == CONFIG_USAGE);
    char *missing[] = { "ts", "--data-dir", NULL };
    CHECK(parse(&c, 2, missing) == CONFIG_USAGE);
    char *fmt[] = { "ts", "--log-format", "xml", NULL };
    CHECK(parse(&c, 3, fmt) == CONFIG_USAGE);
    char *half_tls[] = { "ts", "--tls-cert", "/x.crt", NULL };
    CHECK(parse(&c, 3, half_tls) == CONFIG_USAGE);
}

/* --proxy-protocol: on or off (the default), and on only with proxies to send the header. */
static void test_the_proxy_protocol_needs_trusted_proxies(void)
{
    struct config c;
    char *none[] = { "ts", NULL };
    CHECK(parse(&c, 1, none) == CONFIG_OK && !c.proxy_protocol);
    char *on[] = { "ts", "--trusted-proxy", "10.0.0.1", "--proxy-protocol", "on", NULL };
    CHECK(parse(&c, 5, on) == CONFIG_OK && c.proxy_protocol);
    char *off[] = { "ts", "--proxy-protocol=off", NULL };
    CHECK(parse(&c, 2, off) == CONFIG_OK && !c.proxy_protocol);
    char *alone[] = { "ts", "--proxy-protocol", "on", NULL };
    CHECK(parse(&c, 3, alone) == CONFIG_USAGE);
    char *yes[] = { "ts", "--trusted-proxy", "10.0.0.1", "--proxy-protocol", "yes", NULL };
    CHECK(parse(&c, 5, yes) == CONFIG_USAGE);
}

static void test_admin_subcommand_stops_flag_parsing(void)
{
    struct config c;
    char *argv[] = { "ts", "--data-dir", "/tmp/x", "admin", "list-workspaces", "--json", NULL };
    CHECK(parse(&c, 6, argv) == CONFIG_OK);
    CHECK(c.subcommand_argc == 3);
    CHECK_STR(c.data_dir, "/tmp/x");
}

static void test_help_and_version_exit_ok(void)
{
    struct config c;
    char *help[] = { "ts", "--help", NULL };
    CHECK(parse(&c, 2, help) == CONFIG_EXIT_OK);
    char *version[] = { "ts", "--version", NULL };
    CHECK(parse(&c, 2, version) == CONFIG_EXIT_OK);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_defaults_match_the_documentation),
        UNIT_TEST(test_flag_beats_environment),
        UNIT_TEST(test_threads_default_to_the_cores_of_the_affinity),
        UNIT_TEST(test_bad_flags_are_usage_errors),
        UNIT_TEST(test_the_proxy_protocol_needs_trusted_proxies),
        UNIT_TEST(test_admin_subcommand_stops_flag_parsing),
        UNIT_TEST(test_help_and_version_exit_ok),
    };
    return unit_run("config", tests, sizeof tests / sizeof tests[0]);
}
