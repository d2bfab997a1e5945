# bench_scale: one method-configuration at 1024 and 16,384 GPUs as tawsim runs it (issue 15,
# acceptance 3). Included from tests/bench/CMakeLists.txt with: include(scale.cmake). The smoke
# test runs the 1024-GPU TawPipe point once; the 16,384-GPU points are run by hand
# (bench_scale --benchmark_filter=16384) or as whole processes by scripts/bench-scale --large.
add_executable(bench_scale ${CMAKE_CURRENT_LIST_DIR}/bench_scale.cpp)
target_link_libraries(bench_scale PRIVATE tawpipe_fold tawpipe_sim tawpipe_schedules tawpipe_flags
                                          benchmark::benchmark)
add_test(NAME bench_scale_smoke COMMAND bench_scale --benchmark_filter=scale/tawpipe/1024)
set_tests_properties(bench_scale_smoke PROPERTIES LABELS bench)
