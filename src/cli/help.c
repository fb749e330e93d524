/* SPDX-License-Identifier: MIT */
/*
 * cli/help.c: the command line's help, drawn from the command and option
 * tables (cli.h): the overview ('remat help') and each command's own page
 * ('remat help NAME', 'remat NAME --help'). Nothing here decides what a
 * command accepts; the tables do, and cli/main.c enforces them, so the help and
 * the parser cannot disagree.
 */
#include "cli/help.h"

#include <assert.h>
#include <string.h>

const remat_cli_option_t remat_cli_options[] = {
    {CLI_OPT_CONFIG, "--config", "FILE",
     "config file, MaxText YAML or JSON ('-': standard input); key=value overrides it"},
    {CLI_OPT_FORMAT, "--format", "FMT", NULL /* the command's formats */},
    {CLI_OPT_POLICIES, "--policies", "LIST", "comma-separated presets or policy files"},
    {CLI_OPT_KIND, "--kind", "KIND",
     "table: layers|tensors|names|stages|all (default); chart: timeline|layers|policies"},
    {CLI_OPT_FRONTIER, "--frontier", NULL, "also list the Pareto frontier (exact, by branch and bound)"},
    {CLI_OPT_EXHAUSTIVE, "--exhaustive", NULL,
     "enumerate instead of branch and bound (same answer)"},
    {CLI_OPT_EMIT_POLICY, "--emit-policy", "FILE", "write the placement as a policy file"},
    {CLI_OPT_UNFOLD, "--unfold", NULL, "list every layer's events (else identical layers fold)"},
    {CLI_OPT_STAGE, "--stage", "K", "the pipeline stage to show (default: the worst)"},
    {CLI_OPT_OUTPUT, "--output", "FILE",
     "write to FILE instead of standard output (also -o; report: the HTML page)"},
    {CLI_OPT_HTML, "--html", "FILE", "write the HTML report to FILE ('-': standard output)"},
    {CLI_OPT_CHART, "--chart", NULL, "end with a chart of live HBM even when not a terminal"},
    {CLI_OPT_NO_CHART, "--no-chart", NULL, "no chart of live HBM at the end on a terminal"},
};
const size_t remat_cli_noptions = sizeof remat_cli_options / sizeof remat_cli_options[0];

void remat_cli_formats_text(unsigned formats, bool mark_default, char *buf, size_t size) {
    static const remat_format_t order[] = {REMAT_FMT_TEXT, REMAT_FMT_JSON, REMAT_FMT_CSV,
                                           REMAT_FMT_MD, REMAT_FMT_TRACE};
    assert(formats & CLI_FMT(REMAT_FMT_TEXT));
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof order / sizeof order[0] && len < size; i++) {
        if (formats & CLI_FMT(order[i])) {
            len += (size_t)snprintf(buf + len, size - len, "%s%s%s", len ? ", " : "",
                                    remat_format_name(order[i]),
                                    mark_default && order[i] == REMAT_FMT_TEXT ? " (default)" : "");
        }
    }
}

/* "--config FILE      help": the option and its argument in 18 columns.
   @p owner, when set, prefixes the help with the one command taking it. */
static void option_line(FILE *out, const remat_cli_option_t *o, unsigned formats,
                        const char *owner) {
    char spell[64], fmts[64];
    snprintf(spell, sizeof spell, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    const char *help = o->help;
    if (o->bit == CLI_OPT_FORMAT) {
        remat_cli_formats_text(formats, true, fmts, sizeof fmts);
        help = fmts;
    }
    fprintf(out, "  %-18s %s%s%s\n", spell, owner ? owner : "", owner ? ": " : "", help);
}

void remat_cli_overview(FILE *out, const remat_cli_command_t *cmds, size_t n) {
    fputs("usage: remat <command> [options] [key=value ...]\n\ncommands:\n", out);
    unsigned formats = 0;
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  %-10s %s\n", cmds[i].label, cmds[i].summary);
        formats |= cmds[i].formats;
    }
    fputs("\noptions:\n", out);
    for (size_t k = 0; k < remat_cli_noptions; k++) {
        const remat_cli_option_t *o = &remat_cli_options[k];
        const char *owner = NULL;
        size_t takers = 0;
        for (size_t i = 0; i < n; i++) {
            if (cmds[i].opts & o->bit) {
                owner = cmds[i].name;
                takers++;
            }
        }
        option_line(out, o, formats, takers == 1 ? owner : NULL);
    }
    fputs("\nconfiguration uses MaxText's keys, e.g.\n"
          "  remat analyze model_name=llama3-70b topology=tpu7x-128 per_device_batch_size=2\n"
          "  remat check my_run.yml per_device_batch_size=4   # a MaxText YAML config\n"
          "With no model described, the settings go on top of remat's default run:\n"
          "MaxText's llama3.1-70b recipe for tpu7x-128 (tpu-recipes), which fits.\n"
          "exit codes: 0 ok, 1 a negative verdict (check; solve: no placement fits),\n"
          "2 bad input or usage, 3 internal error.\n"
          "'remat help COMMAND' or 'remat COMMAND --help' describes one command.\n",
          out);
}

/* What every command that analyzes takes besides its options. */
static void settings_help(FILE *out) {
    fputs("\nsettings: MaxText's keys as key=value, after the options or among them\n"
          "('remat list keys' lists them; docs/config.md describes them), and:\n"
          "  FILE.yml           a MaxText YAML config, base_config chains followed\n"
          "                     (--config FILE takes YAML or JSON; '-' is standard input)\n"
          "  python3 -m MaxText.train FILE.yml key=value ...\n"
          "                     a pasted MaxText launch command, as it is\n"
          "  hbm_budget=BYTES   the budget per device, e.g. 90GiB (default: XLA's usable\n"
          "                     HBM per device; the GPUs' assume\n"
          "                     XLA_PYTHON_CLIENT_MEM_FRACTION=0.9, and say so)\n"
          "  safety_margin=F    the share of the budget check keeps free (default 0.05)\n"
          "  hbm_reserve=BYTES  bytes held back for the runtime (default 0)\n"
          "  topology=SLICE     the slice, as MaxText names it (tpu7x-128: 64 chips)\n"
          "With no model described (no model_name, graph or model size) the settings go\n"
          "on top of remat's default run: MaxText's llama3.1-70b recipe for tpu7x-128.\n",
          out);
}

void remat_cli_command_help(FILE *out, const remat_cli_command_t *cmd) {
    assert((cmd->opts & ~(unsigned)CLI_OPT_ALL) == 0);
    assert(!(cmd->opts & CLI_OPT_FORMAT) == !cmd->formats);
    fprintf(out, "usage: remat %s\n\n%s\n", cmd->synopsis, cmd->summary);
    if (cmd->help) {
        fprintf(out, "\n%s", cmd->help);
    }
    if (cmd->opts) {
        fputs("\noptions:\n", out);
        for (size_t k = 0; k < remat_cli_noptions; k++) {
            if (cmd->opts & remat_cli_options[k].bit) {
                option_line(out, &remat_cli_options[k], cmd->formats, NULL);
            }
        }
        settings_help(out);
    }
    fprintf(out, "\nexit codes: %s.\n", cmd->exits);
}
