# bench_simulator: one simulated iteration per schedule, paper cluster and 1024 GPUs (issue 4,
# acceptance 5). Included from tests/bench/CMakeLists.txt with: include(simulator.cmake)
add_executable(bench_simulator ${CMAKE_CURRENT_LIST_DIR}/bench_simulator.cpp)
target_link_libraries(bench_simulator PRIVATE tawpipe_sim tawpipe_schedules tawpipe_flags
                                              benchmark::benchmark)
add_test(NAME bench_simulator_smoke
         COMMAND bench_simulator --benchmark_filter=paper/onefoneb --benchmark_min_time=0.001)
set_tests_properties(bench_simulator_smoke PROPERTIES LABELS bench)
# sim_paper_table: the paper-family table of the closing note (not a test).
add_executable(sim_paper_table ${CMAKE_CURRENT_LIST_DIR}/sim_paper_table.cpp)
target_link_libraries(sim_paper_table PRIVATE tawpipe_sim tawpipe_schedules tawpipe_flags)
