package io.lockstep.spring;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/** A {@link LockstepJob} method as a {@link Job}: each run calls it on its bean. */
public final class MethodJob implements Job {

    private final Object bean;
    private final Method method;

    MethodJob(Object bean, Method method) {
        this.bean = bean;
        this.method = method;
        method.setAccessible(true);
    }

    @Override
    public void execute(JobContext context) throws Exception {
        try {
            if (method.getParameterCount() == 0) {
                method.invoke(bean);
            } else {
                method.invoke(bean, context);
            }
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception ex) {
                throw ex;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw e;
        }
    }

    @Override
    public String toString() {
        return bean.getClass().getSimpleName() + "." + method.getName() + "()";
    }
}
