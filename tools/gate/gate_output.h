// How a gate verdict (tools/gate/gate_verdict.h) is shown: text for people, JSON for scripts,
// Markdown for $GITHUB_STEP_SUMMARY, GitHub workflow-command annotations, JUnit XML.
#ifndef HANGWATCH_TOOLS_GATE_OUTPUT_H_
#define HANGWATCH_TOOLS_GATE_OUTPUT_H_

#include <string>

#include "tools/gate/gate_verdict.h"

namespace hangwatch::tools {

// The verdict first, then the violations, the new, known and fixed hangs and the lag figures
// against their budgets. `max_listed`: hangs listed per section (the rest is counted).
std::string FormatGateText(const GateVerdict& v, size_t max_listed);

// {"passed": bool, "new": [...], "known": [...], "fixed": [...], "violations": [...], ...}
// (tools/README.md lists every field).
std::string FormatGateJson(const GateVerdict& v);

// A summary for $GITHUB_STEP_SUMMARY: the verdict, a table of the new hangs (culprit, source
// line, count, longest), the known / allowed / fixed ones, the lag percentiles against the
// budget, the violations.
std::string FormatGateMarkdown(const GateVerdict& v);

// One "::error file=F,line=L,title=...::message" line per new hang that fails the gate (at its
// culprit's source line; without file= when unknown; the message names the cause), "::warning" for
// new hangs within budget,
// "::error" lines for lag violations. Source paths under `workspace` ($GITHUB_WORKSPACE, may
// be "") are made relative to it, as GitHub expects.
std::string FormatGateGithub(const GateVerdict& v, const std::string& workspace);

// Why a hang waited, for a gate's messages: "lock: waiting for mutex 0x... held by thread 7
// \"w\", which is in ..." (its cause's kind and summary); "" when the hang has no cause.
std::string GateCauseText(const HangRecord& h);

// JUnit XML (tests/tools/junit.xsd): one test case per signature (new, known and fixed), named
// "hang in NAME" after the group's readable name, failing when the hang broke the gate; one per
// lag budget; a single passing "no hangs" case when there is nothing else.
std::string FormatGateJunit(const GateVerdict& v, const std::string& suite, double elapsed_s);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_GATE_OUTPUT_H_
