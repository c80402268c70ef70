// GoogleTest's main, for test programs that run inside node (test_main.cc).

#include <gtest/gtest.h>

extern "C" int isolaneTestMain(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
