"""Writes eight synthetic Kineto-style trace files (rank0.json … rank7.json), one rank each, of
about BYTES bytes apiece into DIR: CPU ops with args, GPU kernels with `ac2g` flows, `PP:`
annotations, float µs timestamps relative to `baseTimeNanoseconds` — the shape of the
`trace_import` benchmark's file. The README's whole-process figures for reading several files
at once use it:

    python3 core/benches/kineto_files.py 8100000 /tmp/eight     # 64.8 MB in all
    python3 core/benches/kineto_files.py 250000000 /tmp/big8    # 2.0 GB in all
    mpipe trace --json /tmp/eight/*.json > /dev/null
"""
import os
import sys
ops=["aten::mm","aten::addmm","aten::relu","aten::empty","aten::copy_","aten::add_","aten::linear","aten::t","aten::transpose","aten::as_strided","cudaLaunchKernel","aten::mse_loss","autograd::engine::evaluate_function: AddmmBackward0"]
target=int(sys.argv[1]); out=sys.argv[2]
os.makedirs(out, exist_ok=True)
for rank in range(8):
    parts=['{"schemaVersion":1,"deviceProperties":[],"distributedInfo":{"backend":"nccl","rank":%d,"world_size":8},"traceEvents":[\n'%rank,
           '{"ph":"M","name":"process_name","pid":4242,"tid":0,"args":{"name":"python3"}}']
    n=sum(len(p) for p in parts); ts=5114768343893.906; i=0
    while n<target:
        stage=rank; mb=i%8
        s=',\n{"ph":"X","cat":"user_annotation","name":"PP:%dF%d","pid":4242,"tid":4242,"ts":%.3f,"dur":812.250,"args":{"External id":%d,"Record function id":0,"Ev Idx":%d}}'%(stage,mb,ts,i,i)
        for k,op in enumerate(ops):
            t=ts+k*3.5; e=i*16+k
            s+=',\n{"ph":"X","cat":"cpu_op","name":"%s","pid":4242,"tid":4242,"ts":%.3f,"dur":3.125,"args":{"External id":%d,"Sequence number":%d,"Fwd thread id":0,"Ev Idx":%d}}'%(op,t,e,i,e)
            if k%4==0:
                s+=',\n{"ph":"X","cat":"kernel","name":"void gemm_kernel<float, 128, 64>(Params)","pid":0,"tid":7,"ts":%.3f,"dur":2.5,"args":{"stream":7,"device":0,"correlation":%d,"grid":[64,1,1],"block":[128,1,1]}}'%(t+10,e)
                s+=',\n{"ph":"s","id":%d,"pid":4242,"tid":4242,"ts":%.3f,"cat":"ac2g","name":"ac2g"}'%(e,t)
                s+=',\n{"ph":"f","id":%d,"pid":0,"tid":7,"ts":%.3f,"cat":"ac2g","name":"ac2g","bp":"e"}'%(e,t+10)
        parts.append(s); n+=len(s); ts+=900; i+=1
    parts.append('\n],"baseTimeNanoseconds":1790857026000000000}\n')
    open('%s/rank%d.json'%(out,rank),'w').write(''.join(parts))
