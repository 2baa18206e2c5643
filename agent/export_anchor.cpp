// libhangwatch.so is the agent's static archive linked whole; this file only gives the shared
// library target a source of its own.
