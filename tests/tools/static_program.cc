// A statically linked program (no dynamic linker, so LD_PRELOAD cannot inject anything): exits
// with the status given as its first argument (default 0).
#include <cstdlib>

int main(int argc, char** argv) { return argc > 1 ? std::atoi(argv[1]) : 0; }
