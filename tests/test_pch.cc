// Compiles the precompiled GoogleTest header that every test binary reuses
// (cmake/test_suite.cmake, hangwatch_share_test_pch). It has no tests of its own.
