// The threads the agent runs itself are never watched: under the preload shim with
// HANGWATCH_THREADS other than `main`, every thread whose waits look like a loop is offered to
// the agent (integrations/preload/thread_waits.h), and a thread of the agent's that waits in
// poll() for a runtime's answer (the JVM's, agent/samplers/jvm_perf_map_request.h) could
// otherwise pass for one and be watched by its own watchdog.
#ifndef HANGWATCH_AGENT_THREADS_AGENT_THREAD_H_
#define HANGWATCH_AGENT_THREADS_AGENT_THREAD_H_

namespace hangwatch::agent {

// Set by a thread the agent started, first thing; read by whoever decides to watch a thread.
inline thread_local bool t_agent_thread = false;

inline void MarkAgentThread() { t_agent_thread = true; }
inline bool IsAgentThread() { return t_agent_thread; }

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_THREADS_AGENT_THREAD_H_
