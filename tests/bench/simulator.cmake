# bench_simulator: one simulated iteration per schedule, paper cluster and 1024 GPUs (issue 4,
# acceptance 5). Included from tests/bench/CMakeLists.txt with: include(simulator.cmake)
# cpu_default resolves the workload as tawsim does: it compiles tawsim's host_defaults.cpp.
add_executable(bench_simulator ${CMAKE_CURRENT_LIST_DIR}/bench_simulator.cpp
                               ${PROJECT_SOURCE_DIR}/sim/cli/host_defaults.cpp)
target_link_libraries(bench_simulator PRIVATE tawpipe_fold tawpipe_sim tawpipe_schedules
                                              tawpipe_flags benchmark::benchmark
                                              fmt::fmt-header-only)
add_test(NAME bench_simulator_smoke
         COMMAND bench_simulator --benchmark_filter=paper/onefoneb --benchmark_min_time=0.001)
set_tests_properties(bench_simulator_smoke PROPERTIES LABELS bench)
# tawsim's default command on every CPU topology, once: it takes well under a second; the timeout
# (a hang guard, not a speed figure: those come from scripts/bench) fails the session-13
# regression, the paper's workload simulated on localhost-cpu for > 13 minutes.
add_test(NAME bench_simulator_cpu_smoke
         COMMAND bench_simulator --benchmark_filter=cpu_default --benchmark_min_time=0.001)
set_tests_properties(bench_simulator_cpu_smoke PROPERTIES LABELS bench TIMEOUT 120)
# sim_paper_table: the paper-family table of the closing note (not a test).
add_executable(sim_paper_table ${CMAKE_CURRENT_LIST_DIR}/sim_paper_table.cpp)
target_link_libraries(sim_paper_table PRIVATE tawpipe_sim tawpipe_schedules tawpipe_flags)
