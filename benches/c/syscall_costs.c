/* Building-block costs behind mwait parking: vDSO clock, sched_getcpu, futex_wake
 * with nobody waiting, a trivial syscall, membarrier with 0..8 busy sibling threads.
 * Build and run: gcc -O2 -pthread benches/c/syscall_costs.c -o /tmp/costs && /tmp/costs
 * (docs/hardware-results.md quotes it for two machines). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sched.h>
#include <pthread.h>
#include <unistd.h>
#include <time.h>
#include <linux/membarrier.h>
#include <linux/futex.h>
#include <sys/syscall.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static volatile int stop;
static void *busy(void *a){while(!stop);return 0;}
static double mb(int n){double t=now();for(int i=0;i<n;i++)syscall(SYS_membarrier,MEMBARRIER_CMD_PRIVATE_EXPEDITED,0,0);return (now()-t)/n;}
int main(){int N=20000;struct timespec ts;int w=0;
 syscall(SYS_membarrier,MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,0,0);
 double t=now();for(int i=0;i<N;i++)clock_gettime(CLOCK_MONOTONIC,&ts);printf("clock_gettime %.1f ns\n",(now()-t)/N);
 t=now();for(int i=0;i<N;i++)sched_getcpu();printf("sched_getcpu %.1f ns\n",(now()-t)/N);
 t=now();for(int i=0;i<N;i++)syscall(SYS_futex,&w,FUTEX_WAKE_PRIVATE,1);printf("futex_wake (nobody) %.1f ns\n",(now()-t)/N);
 t=now();for(int i=0;i<N;i++)syscall(SYS_getppid);printf("getppid syscall %.1f ns\n",(now()-t)/N);
 printf("membarrier, no other thread running %.1f ns\n",mb(N));
 pthread_t th[16];for(int k=1;k<=8;k*=2){stop=0;for(int i=0;i<k;i++)pthread_create(&th[i],0,busy,0);usleep(20000);
 printf("membarrier, %d busy sibling threads %.1f ns\n",k,mb(N/10));stop=1;for(int i=0;i<k;i++)pthread_join(th[i],0);}
 return 0;}
